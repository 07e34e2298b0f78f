import Foundation
import IsletCore

extension LiveActivityPayload {
    /// Reads a payload.
    ///
    /// - Parameters:
    ///   - body: The request body.
    ///   - device: The device a push-to-start is for.
    public static func parse(_ body: Data, device: DeviceID = .defaultDevice) throws(APNsError) -> LiveActivityPayload {
        guard !body.isEmpty else { throw .payloadEmpty("The push has no payload.") }
        // A field given twice is valid JSON that decoders read differently (Foundation keeps the
        // first copy, others the last): APNs passes it on, and a device could show either. Islet
        // drops such a push and says why rather than guess.
        // Read in the checking pass, as a REST body is; only a payload with a duplicate is read
        // again by Foundation, to say what a device would have made of it.
        var duplicate: JSONSyntax.Failure?
        let json: JSONValue
        do throws(JSONSyntax.Failure) {
            json = try JSONSyntax.parse(body)
        } catch where error.kind == .duplicateKey {
            duplicate = error
            guard let decoded = try? WireFormat.decoder().decode(JSONValue.self, from: body) else {
                throw .badRequestPayload("The payload is not valid JSON.")
            }
            json = decoded
        } catch {
            throw .badRequestPayload("The payload is not valid JSON: \(error).")
        }
        guard let aps = json["aps"]?.objectValue else {
            throw .badRequestPayload("The payload has no \"aps\" dictionary.")
        }
        let timestamp = try? date(aps, "timestamp")
        let event = aps["event"]?.stringValue.flatMap { ["start", "update", "end"].contains($0) ? $0 : nil }
        do {
            if let duplicate {
                throw Undeliverable(detail: "\(duplicate): a device could read either copy.")
            }
            return LiveActivityPayload(
                action: try action(from: aps, timestamp: timestamp, device: device), timestamp: timestamp, event: event
            )
        } catch {
            return LiveActivityPayload(
                action: .undeliverable(reason: .invalidPayload, detail: error.detail), timestamp: timestamp, event: event
            )
        }
    }


    private static func action(from aps: [String: JSONValue], timestamp: Date?, device: DeviceID) throws -> Action {
        guard let event = aps["event"]?.stringValue else {
            throw Undeliverable(detail: "aps.event is missing: it must be \"start\", \"update\" or \"end\".")
        }
        // A timestamp that is not a date would leave the push unordered: the device drops it.
        _ = try date(aps, "timestamp")
        let contentState = aps["content-state"]
        if let contentState, contentState.objectValue == nil {
            throw Undeliverable(detail: "aps.content-state must be a dictionary (the ContentState's JSON).")
        }
        let staleDate = try date(aps, "stale-date")
        let relevance = try number(aps, "relevance-score")
        let alert = try alert(aps["alert"], sound: aps["sound"])
        func content() throws -> ActivityContent {
            guard let contentState else {
                throw Undeliverable(detail: "aps.content-state is missing; an \(event) event carries the new state.")
            }
            return ActivityContent(state: contentState, staleDate: staleDate, relevanceScore: relevance ?? 0)
        }
        switch event {
        case "update":
            return .update(ContentUpdate(content: try content(), alert: alert, timestamp: timestamp))
        case "end":
            let dismissal = try date(aps, "dismissal-date").map(DismissalPolicy.after) ?? .default
            let final = contentState == nil ? nil : try content()
            return .end(EndRequest(content: final, dismissalPolicy: dismissal, timestamp: timestamp))
        case "start":
            guard let attributesType = aps["attributes-type"]?.stringValue, !attributesType.isEmpty else {
                throw Undeliverable(detail: "A start needs aps.attributes-type, the ActivityAttributes type's name.")
            }
            guard let attributes = aps["attributes"], attributes.objectValue != nil else {
                throw Undeliverable(detail: "A start needs aps.attributes, a dictionary.")
            }
            guard let alert else {
                throw Undeliverable(detail: "A start needs aps.alert; devices do not start an activity silently.")
            }
            var pushType: PushType?
            let wantsToken = aps["input-push-token"].map { $0 != .integer(0) && $0 != .bool(false) } ?? false
            if aps["input-push-channel"] != nil, wantsToken {
                throw Undeliverable(
                    detail: "A start asks for input-push-token or input-push-channel, not both: an activity has one push type."
                )
            }
            if let channel = aps["input-push-channel"] {
                guard let id = channel.stringValue else {
                    throw Undeliverable(detail: "aps.input-push-channel must be a channel id (a string).")
                }
                pushType = .channel(id)
            } else if wantsToken {
                pushType = .token
            }
            let request = ActivityRequest(
                attributesType: attributesType, attributes: attributes, content: try content(), pushType: pushType,
                alert: alert, deviceId: device
            )
            return .start(PushStart(request: request, timestamp: timestamp))
        default:
            throw Undeliverable(detail: "aps.event \"\(event)\" is not start, update or end.")
        }
    }

    private static func number(_ aps: [String: JSONValue], _ key: String) throws -> Double? {
        guard let value = aps[key] else { return nil }
        guard let number = value.seconds else {
            throw Undeliverable(detail: "aps.\(key) must be a number, not \(value.typeName).")
        }
        return number
    }

    /// A date in the payload: Unix seconds within `WireFormat.dateRange`, or the push is dropped.
    private static func date(_ aps: [String: JSONValue], _ key: String) throws -> Date? {
        guard let seconds = try number(aps, key) else { return nil }
        guard WireFormat.isAcceptedDate(seconds) else {
            throw Undeliverable(detail: "aps.\(key) is \(seconds); a date must be \(WireFormat.dateRangeText).")
        }
        return Date(timeIntervalSince1970: seconds)
    }

    /// An `alert` as a display shows it: `title` and `body` as strings or as localization
    /// dictionaries (`loc-key` with `loc-args` filled into its `%@`s), `sound` as a name or
    /// a dictionary's `name`.
    private static func alert(_ value: JSONValue?, sound: JSONValue?) throws -> Alert? {
        guard let value else { return nil }
        if let text = value.stringValue {
            return Alert(title: "", body: text, sound: soundName(sound))
        }
        guard let members = value.objectValue else {
            throw Undeliverable(detail: "aps.alert must be a dictionary or a string.")
        }
        func text(_ key: String, locKey: String, locArgs: String) -> String {
            if let plain = members[key]?.stringValue { return plain }
            if let localized = members[key]?.objectValue {
                return localizedText(localized["loc-key"], localized["loc-args"])
            }
            return members[locKey] == nil ? "" : localizedText(members[locKey], members[locArgs])
        }
        return Alert(
            title: text("title", locKey: "title-loc-key", locArgs: "title-loc-args"),
            body: text("body", locKey: "loc-key", locArgs: "loc-args"),
            sound: soundName(members["sound"] ?? sound)
        )
    }

    private static func localizedText(_ key: JSONValue?, _ arguments: JSONValue?) -> String {
        var text = key?.stringValue ?? ""
        if case .array(let values) = arguments {
            for value in values {
                guard let range = text.range(of: "%@") else { break }
                text.replaceSubrange(range, with: value.stringValue ?? (try? WireFormat.string(value)) ?? "")
            }
        }
        return text
    }

    private static func soundName(_ value: JSONValue?) -> String? {
        value?.stringValue ?? value?["name"]?.stringValue
    }
}

/// Why a payload APNs accepts is one a device cannot use.
private struct Undeliverable: Error {
    var detail: String
}

extension Error {
    fileprivate var detail: String {
        (self as? Undeliverable)?.detail ?? "\(self)"
    }
}

extension JSONValue {
    /// The value as a number of seconds, if it is a number.
    var seconds: Double? {
        switch self {
        case .integer(let value): Double(value)
        case .number(let value): value
        default: nil
        }
    }
}
