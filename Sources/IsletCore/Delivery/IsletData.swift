import Foundation

/// `data.islet` as an Android phone reads it (docs/android.md, the contract): the sender's
/// activity id — the notification's tag — and the change, as the same payload an iPhone's push
/// becomes, so the phone applies it by the rules an iPhone does (an older timestamp is dropped,
/// an end dismisses when its date comes).
public struct IsletData: Hashable, Sendable {
    /// The sender's activity id (`activityId`), or `nil` when the message has none.
    public var tag: String?
    /// The change, or why the phone cannot use it.
    public var payload: LiveActivityPayload

    /// Reads `data.islet`. A text that is not the contract is an undeliverable payload, with
    /// the reason, never a failure: FCM accepted the message, and the phone drops it.
    public static func read(_ text: String, device: DeviceID) -> IsletData {
        guard let json = try? JSONSyntax.parse(Data(text.utf8)), let members = json.objectValue else {
            return IsletData(tag: nil, payload: undeliverable("data.islet is not a JSON object.", event: nil, timestamp: nil))
        }
        let tag = members["activityId"]?.stringValue
        let event = members["event"]?.stringValue.flatMap { ["start", "update", "end"].contains($0) ? $0 : nil }
        let timestamp = try? date(members, "timestamp")
        do throws(Refusal) {
            guard let tag, !tag.isEmpty else { throw Refusal("data.islet.activityId is missing: the sender's id for the activity.") }
            return IsletData(
                tag: tag, payload: LiveActivityPayload(action: try action(members, device: device), timestamp: timestamp, event: event)
            )
        } catch {
            return IsletData(tag: tag, payload: undeliverable(error.detail, event: event, timestamp: timestamp))
        }
    }

    private struct Refusal: Error {
        var detail: String
        init(_ detail: String) { self.detail = detail }
    }

    private static func undeliverable(_ detail: String, event: String?, timestamp: Date?) -> LiveActivityPayload {
        LiveActivityPayload(action: .undeliverable(reason: .invalidPayload, detail: detail), timestamp: timestamp, event: event)
    }

    private static func action(_ members: [String: JSONValue], device: DeviceID) throws(Refusal) -> LiveActivityPayload.Action {
        guard let event = members["event"]?.stringValue else {
            throw Refusal("data.islet.event is missing: it must be \"start\", \"update\" or \"end\".")
        }
        guard let timestamp = try date(members, "timestamp") else {
            throw Refusal("data.islet.timestamp is missing: a change is ordered by it.")
        }
        guard let state = members["contentState"], state.objectValue != nil else {
            throw Refusal("data.islet.contentState must be an object (the content state's JSON).")
        }
        var relevance = 0.0
        if let value = members["relevanceScore"] {
            guard let number = value.numberValue, number.isFinite else { throw Refusal("data.islet.relevanceScore must be a number.") }
            relevance = number
        }
        let content = ActivityContent(state: state, staleDate: try date(members, "staleDate"), relevanceScore: relevance)
        let alert = try Self.alert(members["alert"])
        switch event {
        case "start":
            guard let type = members["attributesType"]?.stringValue, !type.isEmpty else {
                throw Refusal("A start needs data.islet.attributesType.")
            }
            guard let attributes = members["attributes"], attributes.objectValue != nil else {
                throw Refusal("A start needs data.islet.attributes, an object.")
            }
            let request = ActivityRequest(attributesType: type, attributes: attributes, content: content, alert: alert, deviceId: device)
            return .start(PushStart(request: request, timestamp: timestamp))
        case "update":
            return .update(ContentUpdate(content: content, alert: alert, timestamp: timestamp))
        case "end":
            let dismissal = try date(members, "dismissalDate").map(DismissalPolicy.after) ?? .default
            return .end(EndRequest(content: content, dismissalPolicy: dismissal, timestamp: timestamp))
        default:
            throw Refusal("data.islet.event \"\(event)\" is not start, update or end.")
        }
    }

    /// A date: whole Unix seconds within `WireFormat.dateRange`.
    private static func date(_ members: [String: JSONValue], _ key: String) throws(Refusal) -> Date? {
        guard let value = members[key] else { return nil }
        guard let seconds = value.numberValue, WireFormat.isAcceptedDate(seconds) else {
            throw Refusal("data.islet.\(key) must be a date in Unix seconds, \(WireFormat.dateRangeText).")
        }
        return Date(timeIntervalSince1970: seconds)
    }

    private static func alert(_ value: JSONValue?) throws(Refusal) -> Alert? {
        guard let value else { return nil }
        guard let members = value.objectValue, let title = members["title"]?.stringValue else {
            throw Refusal("data.islet.alert must be an object with a title.")
        }
        return Alert(title: title, body: members["body"]?.stringValue ?? "", sound: members["sound"]?.stringValue)
    }
}
