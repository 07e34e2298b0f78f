/// A refusal as Apple's servers give it: an HTTP status and a `reason` string, plus a
/// `timestamp` (milliseconds) for 410. The body is `{"reason": "…"}`.
public struct APNsError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The HTTP status.
    public var status: Int
    /// Apple's reason, such as `BadDeviceToken`; for strict mode's refusals, Islet's reason for
    /// the drop, such as `olderTimestamp`.
    public var reason: String
    /// For 410: when the token stopped being valid, in milliseconds since 1970.
    public var timestamp: Int64?
    /// A sentence for people, logged and shown by `islet push`; never part of Apple's body.
    public var detail: String

    /// Creates an error.
    public init(status: Int, reason: String, timestamp: Int64? = nil, detail: String = "") {
        self.status = status
        self.reason = reason
        self.timestamp = timestamp
        self.detail = detail
    }

    public var description: String { "\(status) \(reason)\(detail.isEmpty ? "" : ": \(detail)")" }

    static func badRequest(_ reason: String, _ detail: String) -> APNsError {
        APNsError(status: 400, reason: reason, detail: detail)
    }

    static func forbidden(_ reason: String, _ detail: String) -> APNsError {
        APNsError(status: 403, reason: reason, detail: detail)
    }

    // 400
    public static func badCollapseId(_ detail: String) -> APNsError { badRequest("BadCollapseId", detail) }
    public static func badDeviceToken(_ detail: String) -> APNsError { badRequest("BadDeviceToken", detail) }
    public static func badExpirationDate(_ detail: String) -> APNsError { badRequest("BadExpirationDate", detail) }
    public static func badMessageId(_ detail: String) -> APNsError { badRequest("BadMessageId", detail) }
    public static func badPriority(_ detail: String) -> APNsError { badRequest("BadPriority", detail) }
    public static func badTopic(_ detail: String) -> APNsError { badRequest("BadTopic", detail) }
    public static func deviceTokenNotForTopic(_ detail: String) -> APNsError { badRequest("DeviceTokenNotForTopic", detail) }
    public static func duplicateHeaders(_ detail: String) -> APNsError { badRequest("DuplicateHeaders", detail) }
    public static func invalidPushType(_ detail: String) -> APNsError { badRequest("InvalidPushType", detail) }
    public static func missingDeviceToken(_ detail: String) -> APNsError { badRequest("MissingDeviceToken", detail) }
    public static func missingTopic(_ detail: String) -> APNsError { badRequest("MissingTopic", detail) }
    public static func payloadEmpty(_ detail: String) -> APNsError { badRequest("PayloadEmpty", detail) }
    public static func topicDisallowed(_ detail: String) -> APNsError { badRequest("TopicDisallowed", detail) }
    public static func badRequestPayload(_ detail: String) -> APNsError { badRequest("BadRequestPayload", detail) }
    // 400, broadcast and channels
    public static func missingChannelId(_ detail: String) -> APNsError { badRequest("MissingChannelId", detail) }
    public static func badChannelId(_ detail: String) -> APNsError { badRequest("BadChannelId", detail) }
    public static func channelNotRegistered(_ detail: String) -> APNsError { badRequest("ChannelNotRegistered", detail) }
    public static func missingPushType(_ detail: String) -> APNsError { badRequest("MissingPushType", detail) }
    public static func badRequestParams(_ detail: String) -> APNsError { badRequest("BadRequestParams", detail) }
    public static func cannotCreateChannelConfig(_ detail: String) -> APNsError {
        badRequest("CannotCreateChannelConfig", detail)
    }
    // 403
    public static func expiredProviderToken(_ detail: String) -> APNsError { forbidden("ExpiredProviderToken", detail) }
    public static func invalidProviderToken(_ detail: String) -> APNsError { forbidden("InvalidProviderToken", detail) }
    public static func missingProviderToken(_ detail: String) -> APNsError { forbidden("MissingProviderToken", detail) }
    // Others
    public static func badPath(_ detail: String) -> APNsError { APNsError(status: 404, reason: "BadPath", detail: detail) }
    public static func methodNotAllowed(_ detail: String) -> APNsError {
        APNsError(status: 405, reason: "MethodNotAllowed", detail: detail)
    }
    public static func unregistered(since milliseconds: Int64, _ detail: String) -> APNsError {
        APNsError(status: 410, reason: "Unregistered", timestamp: milliseconds, detail: detail)
    }
    public static func expiredToken(since milliseconds: Int64, _ detail: String) -> APNsError {
        APNsError(status: 410, reason: "ExpiredToken", timestamp: milliseconds, detail: detail)
    }
    public static func payloadTooLarge(_ detail: String) -> APNsError {
        APNsError(status: 413, reason: "PayloadTooLarge", detail: detail)
    }
    public static func internalServerError(_ detail: String) -> APNsError {
        APNsError(status: 500, reason: "InternalServerError", detail: detail)
    }
}
