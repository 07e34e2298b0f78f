import Foundation

/// Writes Islet's wire format directly, for the values every change writes (an activity, its
/// content, its events): the same bytes `WireFormat.encoder()` makes — keys sorted by their
/// UTF-8 bytes, slashes unescaped, dates as Unix seconds, a whole number without `.0`, `nil`
/// members left out — without `Codable`'s boxing, which was the largest part of a change's
/// cost. A test compares the two on random values, byte for byte.
///
/// A type writes its members in sorted order itself; the test is what checks the order.
public struct JSONWriter {
    /// The JSON written so far.
    public private(set) var bytes: [UInt8] = []

    /// Creates an empty writer, with room for `capacity` bytes.
    public init(capacity: Int = 512) {
        bytes.reserveCapacity(capacity)
    }

    /// The text written.
    public var text: String { String(decoding: bytes, as: UTF8.self) }

    // MARK: Structure

    /// Opens an object.
    public mutating func beginObject() { bytes.append(UInt8(ascii: "{")) }

    /// Closes an object.
    public mutating func endObject() { bytes.append(UInt8(ascii: "}")) }

    /// Opens an array.
    public mutating func beginArray() { bytes.append(UInt8(ascii: "[")) }

    /// Closes an array.
    public mutating func endArray() { bytes.append(UInt8(ascii: "]")) }

    /// Starts an object member: its key, after a comma unless it is the first.
    public mutating func member(_ key: StaticString) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        key.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":")])
    }

    /// Starts an object member whose key is not known in advance (escaped as any string).
    public mutating func member(_ key: String) {
        separate()
        string(key)
        bytes.append(UInt8(ascii: ":"))
    }

    /// Starts an array element: a comma unless it is the first.
    public mutating func element() { separate() }

    private mutating func separate() {
        if let last = bytes.last, last != UInt8(ascii: "{"), last != UInt8(ascii: "[") {
            bytes.append(UInt8(ascii: ","))
        }
    }

    // MARK: Scalars

    /// `null`.
    public mutating func null() { bytes.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C]) }

    /// `true` or `false`.
    public mutating func bool(_ value: Bool) {
        if value {
            bytes.append(contentsOf: [0x74, 0x72, 0x75, 0x65])
        } else {
            bytes.append(contentsOf: [0x66, 0x61, 0x6C, 0x73, 0x65])
        }
    }

    /// A whole number.
    public mutating func integer(_ value: Int64) {
        if value == .min {
            bytes.append(contentsOf: "-9223372036854775808".utf8)
            return
        }
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var digits: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)  // 32 bytes: room for 20 digits
        withUnsafeMutableBytes(of: &digits) { buffer in
            var start = buffer.count
            repeat {
                start -= 1
                buffer[start] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            bytes.append(contentsOf: buffer[start...])
        }
    }

    /// A number as `JSONEncoder` writes a `Double`: its shortest form, a whole number without
    /// `.0`. Throws, as the encoder does, for a value JSON cannot hold (infinity, NaN).
    public mutating func number(_ value: Double) throws {
        guard value.isFinite else {
            throw EncodingError.invalidValue(value, EncodingError.Context(codingPath: [], debugDescription: "Unable to encode \(value) directly in JSON."))
        }
        // Whole numbers below 10^15 print as their digits; others as Swift's description does.
        if value.rounded(.towardZero) == value, value.magnitude < 1e15, !(value == 0 && value.sign == .minus) {
            integer(Int64(value))
            return
        }
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        bytes.append(contentsOf: text.utf8)
    }

    /// A date, as Unix seconds.
    public mutating func date(_ value: Date) throws {
        try number(value.timeIntervalSince1970)
    }

    /// A string, escaped as `JSONEncoder` escapes it (without escaping slashes).
    public mutating func string(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { utf8 in
            var start = 0
            for index in utf8.indices {
                let byte = utf8[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<index]))
                escape(byte)
                start = index + 1
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private mutating func escape(_ byte: UInt8) {
        bytes.append(UInt8(ascii: "\\"))
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(byte)
        case 0x08: bytes.append(UInt8(ascii: "b"))
        case 0x09: bytes.append(UInt8(ascii: "t"))
        case 0x0A: bytes.append(UInt8(ascii: "n"))
        case 0x0C: bytes.append(UInt8(ascii: "f"))
        case 0x0D: bytes.append(UInt8(ascii: "r"))
        default:
            bytes.append(contentsOf: "u00".utf8)
            bytes.append(contentsOf: CollectionOfOne(byte).hexEncoded.utf8)
        }
    }

    // MARK: Values

    /// A member whose value is left out when `nil`, as synthesized `Encodable` does.
    public mutating func member(_ key: StaticString, ifPresent value: (some JSONWritable)?) throws {
        guard let value else { return }
        member(key)
        try value.write(to: &self)
    }

    /// A date member, left out when `nil`.
    public mutating func member(_ key: StaticString, date: Date?) throws {
        guard let date else { return }
        member(key)
        try self.date(date)
    }

    /// A string member, left out when `nil`.
    public mutating func member(_ key: StaticString, string: String?) {
        guard let string else { return }
        member(key)
        self.string(string)
    }

    /// A member whose value has no writer of its own (a rare one): through the encoder, left
    /// out when `nil`.
    public mutating func member(_ key: StaticString, encoding value: (some Encodable)?) throws {
        guard let value else { return }
        member(key)
        bytes.append(contentsOf: try WireFormat.encoder().encode(value))
    }
}

/// A value that writes Islet's wire format itself (`JSONWriter`), byte for byte as its
/// `Encodable` form encodes with `WireFormat.encoder()`.
public protocol JSONWritable: Encodable {
    /// Writes the value.
    func write(to json: inout JSONWriter) throws
}

extension JSONValue: JSONWritable {
    public func write(to json: inout JSONWriter) throws {
        switch self {
        case .null: json.null()
        case .bool(let value): json.bool(value)
        case .integer(let value): json.integer(value)
        case .number(let value): try json.number(value)
        case .string(let value): json.string(value)
        case .array(let values):
            json.beginArray()
            for value in values {
                json.element()
                try value.write(to: &json)
            }
            json.endArray()
        case .object(let members):
            json.beginObject()
            for (key, value) in members.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }) {
                json.member(key)
                try value.write(to: &json)
            }
            json.endObject()
        }
    }
}

extension String: JSONWritable {
    public func write(to json: inout JSONWriter) { json.string(self) }
}

extension JSONWritable where Self: RawRepresentable, RawValue == String {
    public func write(to json: inout JSONWriter) { json.string(rawValue) }
}

extension ActivityState: JSONWritable {}
extension ActivityStyle: JSONWritable {}
extension StateChangeReason: JSONWritable {}
extension IgnoreReason: JSONWritable {}
extension PushTokenChange.Kind: JSONWritable {}
extension ActivitySource: JSONWritable {}

extension Activity: JSONWritable {
    public func write(to json: inout JSONWriter) throws {
        json.beginObject()
        json.member("activityState")
        state.write(to: &json)
        json.member("attributes")
        try attributes.write(to: &json)
        json.member("attributesType")
        json.string(attributesType)
        try json.member("autoEndAt", date: autoEndAt)
        if let budgetedPushes {
            json.member("budgetedPushes")
            json.beginArray()
            for date in budgetedPushes {
                json.element()
                try json.date(date)
            }
            json.endArray()
        }
        json.member("bundleId")
        json.string(bundleId)
        json.member("content")
        try content.write(to: &json)
        json.member("createdAt")
        try json.date(createdAt)
        json.member("device")
        json.string(deviceId)
        try json.member("dismissAt", date: dismissAt)
        try json.member("dismissedAt", date: dismissedAt)
        try json.member("endedAt", date: endedAt)
        json.member("id")
        json.string(id)
        json.member("key", string: key)
        try json.member("lastUpdateTimestamp", date: lastUpdateTimestamp)
        json.member("pushToken", string: pushToken)
        try json.member("pushType", ifPresent: pushType)
        if let renew {
            json.member("renew")
            json.bool(renew)
        }
        try json.member("renewAt", date: renewAt)
        try json.member("renewUntil", date: renewUntil)
        json.member("renewedBy", string: renewedBy)
        json.member("renewedFrom", string: renewedFrom)
        try json.member("scheduledStart", date: scheduledStart)
        try json.member("source", ifPresent: source)
        try json.member("startAlert", ifPresent: startAlert)
        try json.member("startedAt", date: startedAt)
        json.member("style")
        style.write(to: &json)
        json.endObject()
    }
}

extension ActivityContent: JSONWritable {
    public func write(to json: inout JSONWriter) throws {
        json.beginObject()
        json.member("relevanceScore")
        try json.number(relevanceScore)
        try json.member("staleDate", date: staleDate)
        json.member("state")
        try state.write(to: &json)
        json.endObject()
    }
}

extension Alert: JSONWritable {
    public func write(to json: inout JSONWriter) {
        json.beginObject()
        json.member("body")
        json.string(body)
        json.member("sound", string: sound)
        json.member("title")
        json.string(title)
        json.endObject()
    }
}

extension PushType: JSONWritable {
    public func write(to json: inout JSONWriter) {
        switch self {
        case .token:
            json.string("token")
        case .channel(let id):
            json.beginObject()
            json.member("channel")
            json.string(id)
            json.endObject()
        }
    }
}

extension ContentChange: JSONWritable {
    public func write(to json: inout JSONWriter) throws {
        json.beginObject()
        json.member("content")
        try content.write(to: &json)
        json.member("timestamp")
        try json.date(timestamp)
        json.endObject()
    }
}

extension StateChange: JSONWritable {
    public func write(to json: inout JSONWriter) throws {
        json.beginObject()
        json.member("at")
        try json.date(at)
        json.member("from")
        from.write(to: &json)
        json.member("reason")
        reason.write(to: &json)
        json.member("to")
        to.write(to: &json)
        json.endObject()
    }
}

extension IgnoredUpdate: JSONWritable {
    public func write(to json: inout JSONWriter) throws {
        json.beginObject()
        json.member("action")
        json.string(action)
        try json.member("content", ifPresent: content)
        try json.member("lastUpdateTimestamp", date: lastUpdateTimestamp)
        json.member("message")
        json.string(message)
        json.member("reason")
        reason.write(to: &json)
        json.member("timestamp")
        try json.date(timestamp)
        json.endObject()
    }
}

extension PushTokenChange: JSONWritable {
    public func write(to json: inout JSONWriter) {
        json.beginObject()
        json.member("attributesType", string: attributesType)
        json.member("kind")
        kind.write(to: &json)
        json.member("pushToken")
        json.string(pushToken)
        json.endObject()
    }
}

extension APNsEnvironment: JSONWritable {}
extension DeliveryReport.Outcome: JSONWritable {}

extension DeliveryReport: JSONWritable {
    public func write(to json: inout JSONWriter) throws {
        json.beginObject()
        json.member("apnsId", string: apnsId)
        json.member("attempt")
        json.integer(Int64(attempt))
        if let coalescedInto {
            json.member("coalescedInto")
            json.integer(coalescedInto)
        }
        json.member("delivery")
        json.integer(delivery)
        try json.member("environment", ifPresent: environment)
        json.member("event")
        json.string(event)
        if let latencyMs {
            json.member("latencyMs")
            try json.number(latencyMs)
        }
        try json.member("nextAttemptAt", date: nextAttemptAt)
        json.member("note", string: note)
        json.member("outcome")
        outcome.write(to: &json)
        if let priority {
            json.member("priority")
            json.integer(Int64(priority))
        }
        json.member("priorityReason", string: priorityReason)
        json.member("reason", string: reason)
        if let status {
            json.member("status")
            json.integer(Int64(status))
        }
        json.member("target", string: target)
        json.endObject()
    }
}
