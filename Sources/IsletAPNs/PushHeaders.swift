import Foundation
import HTTPTypes
import IsletCore

/// The `apns-*` headers of a push, checked by Apple's rules.
public struct PushHeaders: Hashable, Sendable {
    /// `apns-id` (or `apns-request-id`) as sent, or a new UUID when none was.
    public var requestId: String
    /// `apns-priority`: 10 (the default), 5, or 1 (power-saving: the device is not woken). Only
    /// 10 spends a Live Activity's budget.
    public var priority: Int
    /// `apns-expiration`, Unix seconds; 0 means "deliver once or never".
    public var expiration: Int64?
    /// `apns-collapse-id`.
    public var collapseId: String?
    /// The app a device push is for: its topic without `.push-type.liveactivity`.
    public var topicBundleId: BundleID?
    /// `apns-channel-id` of a broadcast.
    public var channelId: String?

    /// The suffix of every Live Activity topic.
    public static let topicSuffix = ".push-type.liveactivity"

    /// The id a response carries when a request's own could not be read: a new UUID.
    public static func newRequestId() -> String { UUID().uuidString.lowercased() }

    /// Reads the id a response must echo: `apns-id` (device pushes) or `apns-request-id`.
    public static func requestId(in headers: HTTPFields, name: String) throws(APNsError) -> String {
        guard let value = headers[HTTPField.Name(name)!] else { return newRequestId() }
        guard UUID(uuidString: value) != nil else {
            throw .badMessageId("\(name) must be a canonical UUID such as 123e4567-e89b-12d3-a456-4266554400a0, not \"\(value)\".")
        }
        return value
    }

    /// Checks the headers of `POST /3/device/{token}`.
    public static func device(_ headers: HTTPFields) throws(APNsError) -> PushHeaders {
        try refuseDuplicates(in: headers, ["apns-id", "apns-topic", "apns-push-type", "apns-priority", "apns-expiration", "apns-collapse-id", "authorization"])
        let requestId = try requestId(in: headers, name: "apns-id")
        guard let topic = headers[HTTPField.Name("apns-topic")!] else {
            throw .missingTopic("A Live Activity push needs apns-topic: <bundle id>\(topicSuffix).")
        }
        guard !topic.isEmpty else { throw .badTopic("apns-topic is empty.") }
        guard topic.hasSuffix(topicSuffix), topic.count > topicSuffix.count else {
            throw .topicDisallowed("Live Activity pushes go to the topic <bundle id>\(topicSuffix), not \"\(topic)\".")
        }
        try checkPushType(in: headers)
        return PushHeaders(
            requestId: requestId, priority: try priority(in: headers), expiration: try expiration(in: headers),
            collapseId: try collapseId(in: headers), topicBundleId: String(topic.dropLast(topicSuffix.count))
        )
    }

    /// Checks the headers of `POST /4/broadcasts/apps/{bundleId}`.
    public static func broadcast(_ headers: HTTPFields) throws(APNsError) -> PushHeaders {
        try refuseDuplicates(in: headers, ["apns-request-id", "apns-channel-id", "apns-push-type", "apns-priority", "apns-expiration", "authorization"])
        let requestId = try requestId(in: headers, name: "apns-request-id")
        let channelId = try channelId(in: headers)
        guard headers[HTTPField.Name("apns-push-type")!] != nil else {
            throw .missingPushType("A broadcast needs apns-push-type: liveactivity.")
        }
        try checkPushType(in: headers)
        guard let expiration = try expiration(in: headers) else {
            throw .badExpirationDate("A broadcast needs apns-expiration (0 on a channel that stores no message).")
        }
        guard headers[HTTPField.Name("apns-priority")!] != nil else {
            throw .badPriority("A broadcast needs apns-priority: 10, 5 or 1.")
        }
        return PushHeaders(
            requestId: requestId, priority: try priority(in: headers), expiration: expiration, collapseId: nil,
            topicBundleId: nil, channelId: channelId
        )
    }

    /// Reads `apns-channel-id`: present and base64.
    public static func channelId(in headers: HTTPFields) throws(APNsError) -> String {
        guard let value = headers[HTTPField.Name("apns-channel-id")!], !value.isEmpty else {
            throw .missingChannelId("This request needs the apns-channel-id header.")
        }
        guard Data(base64Encoded: value) != nil else {
            throw .badChannelId("apns-channel-id must be a channel id as APNs issued it (base64), not \"\(value)\".")
        }
        return value
    }

    private static func refuseDuplicates(in headers: HTTPFields, _ names: [String]) throws(APNsError) {
        for name in names where headers[values: HTTPField.Name(name)!].count > 1 {
            throw .duplicateHeaders("The \(name) header appears more than once.")
        }
    }

    private static func checkPushType(in headers: HTTPFields) throws(APNsError) {
        let pushType = headers[HTTPField.Name("apns-push-type")!]
        // Apple's own documents spell it liveactivity, Liveactivity and LiveActivity.
        guard pushType?.lowercased() == "liveactivity" else {
            throw .invalidPushType(
                "Islet takes Live Activity pushes: apns-push-type must be liveactivity, not \(pushType.map { "\"\($0)\"" } ?? "missing")."
            )
        }
    }

    private static func priority(in headers: HTTPFields) throws(APNsError) -> Int {
        guard let value = headers[HTTPField.Name("apns-priority")!] else { return 10 }
        guard ["1", "5", "10"].contains(value), let priority = Int(value) else {
            throw .badPriority("apns-priority is 10, 5 or 1, not \"\(value)\".")
        }
        return priority
    }

    private static func expiration(in headers: HTTPFields) throws(APNsError) -> Int64? {
        guard let value = headers[HTTPField.Name("apns-expiration")!] else { return nil }
        // Digits only: `Int64` alone would take "+5" and "-0".
        guard !value.isEmpty, value.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let expiration = Int64(value) else {
            throw .badExpirationDate("apns-expiration must be Unix seconds (or 0), not \"\(value)\".")
        }
        return expiration
    }

    private static func collapseId(in headers: HTTPFields) throws(APNsError) -> String? {
        guard let value = headers[HTTPField.Name("apns-collapse-id")!] else { return nil }
        guard value.utf8.count <= 64 else {
            throw .badCollapseId("apns-collapse-id may be at most 64 bytes.")
        }
        return value
    }
}
