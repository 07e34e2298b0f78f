import Foundation
import IsletCore

/// The FCM messages of the changes Islet will deliver to Android phones (docs/android.md, "How it
/// works"): a high-priority data message whose `data.islet` is a JSON text the app builds its
/// Live Update from — the event, the activity, its content, and the notification its type's
/// `android` region draws. Dates are whole Unix seconds, as in the APNs payloads.
public enum AndroidPayloads {
    /// FCM's limit on a message's data, keys and values together (`FCMMessage.maximumPayload`).
    static let maximumData = 4096
    /// The data key the payload travels under.
    static let key = "islet"

    /// `data.islet` for a start, an update or an end.
    static func islet(
        event: String, activity: Activity, content: ActivityContent, timestamp: Date, dismissal: Date? = nil, alert: Alert? = nil,
        notification: AndroidNotification
    ) -> JSONValue {
        var members: [String: JSONValue] = [
            "event": .string(event), "activityId": .string(activity.id), "bundleId": .string(activity.bundleId),
            "attributesType": .string(activity.attributesType), "attributes": activity.attributes, "contentState": content.state,
            "timestamp": Payloads.seconds(timestamp), "notification": encoded(notification),
        ]
        if let stale = content.staleDate { members["staleDate"] = Payloads.seconds(stale) }
        if let dismissal { members["dismissalDate"] = Payloads.seconds(dismissal) }
        if content.relevanceScore != 0 { members["relevanceScore"] = .number(content.relevanceScore) }
        if let alert {
            var body: [String: JSONValue] = ["title": .string(alert.title), "body": .string(alert.body)]
            if let sound = alert.sound { body["sound"] = .string(sound) }
            members["alert"] = .object(body)
        }
        return .object(members)
    }

    /// `data.islet` as sent, refused when the message's data would pass FCM's 4,096 bytes: a
    /// change that cannot be delivered is refused before it is written.
    static func text(_ islet: JSONValue) throws -> String {
        let text = try WireFormat.string(islet)
        let size = key.utf8.count + text.utf8.count
        guard size <= maximumData else {
            throw IsletError(
                .payloadTooLarge,
                "Delivered to an Android phone, this change's FCM data would be \(size) bytes; FCM takes at most \(maximumData)."
            )
        }
        return text
    }

    /// The `messages:send` body: the data message to `address` (`message.token` or
    /// `message.fid`), high priority, collapsed per activity, kept by FCM for `ttl` seconds
    /// (whole, at least 0).
    public static func message(to address: FCMAddress, islet: String, activityId: ActivityID, ttl: TimeInterval) -> JSONValue {
        let seconds = ttl.isFinite ? Int64(min(max(0, ttl), 28 * 86_400).rounded(.down)) : 0
        return [
            "message": [
                address.field: .string(address.value), "data": [key: .string(islet)],
                "android": ["priority": "HIGH", "collapse_key": .string(activityId), "ttl": .string("\(seconds)s")],
            ],
        ]
    }

    /// The notification the activity's type draws for `content`: its layout's `android`
    /// region, or the default card's words when it has none (or its layout cannot be read).
    static func notification(of activity: Activity, content: ActivityContent, layout: LayoutRecord?, now: Date) -> AndroidNotification {
        let parsed = layout.flatMap { try? Layout.parse($0.layout) }
        let region = parsed?.android ?? Layout.defaultAndroid(attributesType: activity.attributesType, state: content.state)
        let scope = LayoutScope(
            attributes: activity.attributes, state: content.state, isStale: false, dateEncoding: parsed?.dateEncoding ?? .secondsSince2001
        )
        return region.notification(in: scope, now: now.timeIntervalSince1970)
    }

    private static func encoded(_ notification: AndroidNotification) -> JSONValue {
        (try? JSONDecoder().decode(JSONValue.self, from: JSONEncoder().encode(notification))) ?? ["title": .string(notification.title)]
    }
}
