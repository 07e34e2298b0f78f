import Foundation
import IsletCore

/// The APNs payloads of the changes Islet delivers, as Apple's servers and a phone read them:
/// `aps` with `event`, `timestamp`, `content-state` and the rest, dates in whole Unix seconds.
/// A content state goes byte for byte as the app sent it.
enum Payloads {
    /// The attributes member a push-to-start carries Islet's activity id in.
    static let reference = "islet"
    /// The most a device-token request's payload may be (Apple's limit); a broadcast's is 5120.
    static let maximumSize = 4096
    static let maximumBroadcastSize = 5120

    /// `event: start`, to a push-to-start token: the activity's type, attributes (with
    /// `islet`), content and alert, and what the phone hands back (`input-push-token` or
    /// `input-push-channel`).
    static func start(_ activity: Activity, alert: Alert) -> JSONValue {
        var aps = content(activity.content)
        aps["event"] = "start"
        aps["timestamp"] = seconds(activity.startedAt ?? activity.createdAt)
        aps["attributes-type"] = .string(activity.attributesType)
        var attributes = activity.attributes.objectValue ?? [:]
        attributes[reference] = .string(activity.id)
        aps["attributes"] = .object(attributes)
        aps["alert"] = encode(alert)
        if case .channel(let id) = activity.pushType {
            aps["input-push-channel"] = .string(id)
        } else {
            aps["input-push-token"] = 1
        }
        return ["aps": .object(aps)]
    }

    /// `event: update`: the new content, when it was made, and the alert if the update has one.
    static func update(_ content: ActivityContent, timestamp: Date, alert: Alert?) -> JSONValue {
        var aps = Self.content(content)
        aps["event"] = "update"
        aps["timestamp"] = seconds(timestamp)
        if let alert { aps["alert"] = encode(alert) }
        return ["aps": .object(aps)]
    }

    /// `event: end`: the final content, and when it leaves the Lock Screen (`nil`: the default).
    static func end(_ content: ActivityContent, timestamp: Date, dismissal: Date?) -> JSONValue {
        var aps = Self.content(content)
        aps["event"] = "end"
        aps["timestamp"] = seconds(timestamp)
        if let dismissal { aps["dismissal-date"] = seconds(dismissal) }
        return ["aps": .object(aps)]
    }

    private static func content(_ content: ActivityContent) -> [String: JSONValue] {
        var aps: [String: JSONValue] = ["content-state": content.state]
        if let stale = content.staleDate { aps["stale-date"] = seconds(stale) }
        if content.relevanceScore != 0 { aps["relevance-score"] = .number(content.relevanceScore) }
        return aps
    }

    private static func encode(_ alert: Alert) -> JSONValue {
        var members: [String: JSONValue] = ["title": .string(alert.title), "body": .string(alert.body)]
        if let sound = alert.sound { members["sound"] = .string(sound) }
        return .object(members)
    }

    /// Whole Unix seconds, as Apple's examples write every date.
    static func seconds(_ date: Date) -> JSONValue {
        .integer(Int64(date.timeIntervalSince1970.rounded(.down)))
    }

    /// The payload as sent, refused when over Apple's limit: a change that cannot be delivered
    /// is refused before it is written.
    static func text(_ payload: JSONValue, limit: Int = maximumSize) throws -> String {
        let text = try WireFormat.string(payload)
        guard text.utf8.count <= limit else {
            throw IsletError(
                .payloadTooLarge,
                "Delivered to a phone, this change's APNs payload would be \(text.utf8.count) bytes; Apple takes at most \(limit)."
            )
        }
        return text
    }
}
