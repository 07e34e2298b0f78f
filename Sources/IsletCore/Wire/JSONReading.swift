import Foundation

/// A value read straight from a `JSONValue` (as `JSONSyntax.parse` reads it), as its
/// `Decodable` form reads the same JSON with `WireFormat.decoder()`: for the values read back
/// on every event a webhook sends (an event, its content or state change), where `Codable`'s
/// boxing, and `JSONValue.decode`'s text in between, were most of the work. A test compares
/// the two on random values.
public protocol JSONReadable: Decodable {
    /// Reads the value; throws `DecodingError` where the decoder would.
    init(json: JSONValue) throws
}

extension JSONValue {
    /// The member at `key`; throws as the decoder does when it is missing.
    func required(_ key: String) throws -> JSONValue {
        guard case .object(let members) = self else { throw Self.mismatch("an object", found: self) }
        guard let value = members[key] else {
            throw DecodingError.keyNotFound(MemberKey(key), .init(codingPath: [], debugDescription: "No value for key \"\(key)\"."))
        }
        return value
    }

    /// The member at `key`, `nil` when it is missing or null (`decodeIfPresent`).
    func optional(_ key: String) throws -> JSONValue? {
        guard case .object(let members) = self else { throw Self.mismatch("an object", found: self) }
        guard let value = members[key], value != .null else { return nil }
        return value
    }

    func readString() throws -> String {
        guard case .string(let text) = self else { throw Self.mismatch("a string", found: self) }
        return text
    }

    func readDouble() throws -> Double {
        switch self {
        case .integer(let value): return Double(value)
        case .number(let value): return value
        default: throw Self.mismatch("a number", found: self)
        }
    }

    func readInteger() throws -> Int64 {
        guard case .integer(let value) = self else { throw Self.mismatch("a whole number", found: self) }
        return value
    }

    /// A date, as Unix seconds.
    func readDate() throws -> Date { Date(timeIntervalSince1970: try readDouble()) }

    /// A string-backed enumeration's case.
    func read<T: RawRepresentable>(_ type: T.Type) throws -> T where T.RawValue == String {
        let text = try readString()
        guard let value = T(rawValue: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "Cannot initialize \(T.self) from invalid String value \(text)"))
        }
        return value
    }

    private static func mismatch(_ expected: String, found: JSONValue) -> DecodingError {
        .typeMismatch(JSONValue.self, .init(codingPath: [], debugDescription: "Expected \(expected) but found \(found.typeName) instead."))
    }
}

extension Event: JSONReadable {
    public init(json: JSONValue) throws {
        self.init(
            id: try json.required("id").readInteger(), type: try json.required("type").read(EventType.self),
            time: try json.required("time").readDate(), bundleId: try json.required("bundleId").readString(),
            deviceId: try json.required("device").readString(), activityId: try json.optional("activityId")?.readString(),
            data: try json.required("data")
        )
    }
}

extension ActivityContent: JSONReadable {
    public init(json: JSONValue) throws {
        self.init(
            state: try json.required("state"), staleDate: try json.optional("staleDate")?.readDate(),
            relevanceScore: try json.optional("relevanceScore")?.readDouble() ?? 0
        )
    }
}

extension ContentChange: JSONReadable {
    public init(json: JSONValue) throws {
        self.init(content: try ActivityContent(json: json.required("content")), timestamp: try json.required("timestamp").readDate())
    }
}

extension StateChange: JSONReadable {
    public init(json: JSONValue) throws {
        self.init(
            from: try json.required("from").read(ActivityState.self), to: try json.required("to").read(ActivityState.self),
            reason: try json.required("reason").read(StateChangeReason.self), at: try json.required("at").readDate()
        )
    }
}
