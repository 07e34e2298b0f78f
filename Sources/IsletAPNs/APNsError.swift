import IsletCore

/// A refusal as Apple's servers give it: an HTTP status and a `reason` string, plus a
/// `timestamp` (milliseconds) for 410. The body is `{"reason": "…"}`.
///
/// The reasons are a closed set: Apple's (`Reason`), and — for an app in strict mode — the
/// reason a device dropped the push (`dropped`).
public struct APNsError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Apple's reasons (`APNsReason`): one closed set for the endpoint that plays Apple and the
    /// sender that talks to Apple.
    public typealias Reason = APNsReason

    private enum Code: Hashable, Sendable {
        case apple(Reason)
        case dropped(IgnoreReason)
    }

    private let code: Code
    /// For 410: when the token stopped being valid, in milliseconds since 1970.
    public let timestamp: Int64?
    /// A sentence for people, logged and shown by `islet push`; never part of Apple's body.
    public let detail: String

    /// Creates one of Apple's refusals.
    public init(_ reason: Reason, timestamp: Int64? = nil, _ detail: String = "") {
        self.code = .apple(reason)
        self.timestamp = timestamp
        self.detail = detail
    }

    /// A push a device dropped, refused with 400 because the app asked for strict pushes.
    public static func dropped(_ reason: IgnoreReason, _ detail: String) -> APNsError {
        APNsError(code: .dropped(reason), detail: detail)
    }

    private init(code: Code, detail: String) {
        self.code = code
        self.timestamp = nil
        self.detail = detail
    }

    /// The HTTP status.
    public var statusCode: Int {
        switch code {
        case .apple(let reason): reason.statusCode
        case .dropped: 400
        }
    }

    /// The `reason` of the body: Apple's, such as `BadDeviceToken`, or for strict mode's
    /// refusals Islet's reason for the drop, such as `olderTimestamp`.
    public var reason: String {
        switch code {
        case .apple(let reason): reason.rawValue
        case .dropped(let reason): reason.rawValue
        }
    }

    /// Apple's reason, unless this is a strict-mode drop.
    public var appleReason: Reason? {
        if case .apple(let reason) = code { return reason }
        return nil
    }

    public var description: String { "\(statusCode) \(reason)\(detail.isEmpty ? "" : ": \(detail)")" }

    // One constructor per reason, so a refusal reads as Apple names it.
    public static func badCollapseId(_ detail: String) -> APNsError { APNsError(.badCollapseId, detail) }
    public static func badDeviceToken(_ detail: String) -> APNsError { APNsError(.badDeviceToken, detail) }
    public static func badExpirationDate(_ detail: String) -> APNsError { APNsError(.badExpirationDate, detail) }
    public static func badMessageId(_ detail: String) -> APNsError { APNsError(.badMessageId, detail) }
    public static func badPriority(_ detail: String) -> APNsError { APNsError(.badPriority, detail) }
    public static func badTopic(_ detail: String) -> APNsError { APNsError(.badTopic, detail) }
    public static func deviceTokenNotForTopic(_ detail: String) -> APNsError { APNsError(.deviceTokenNotForTopic, detail) }
    public static func duplicateHeaders(_ detail: String) -> APNsError { APNsError(.duplicateHeaders, detail) }
    public static func invalidPushType(_ detail: String) -> APNsError { APNsError(.invalidPushType, detail) }
    public static func missingDeviceToken(_ detail: String) -> APNsError { APNsError(.missingDeviceToken, detail) }
    public static func missingTopic(_ detail: String) -> APNsError { APNsError(.missingTopic, detail) }
    public static func payloadEmpty(_ detail: String) -> APNsError { APNsError(.payloadEmpty, detail) }
    public static func topicDisallowed(_ detail: String) -> APNsError { APNsError(.topicDisallowed, detail) }
    public static func badRequestPayload(_ detail: String) -> APNsError { APNsError(.badRequestPayload, detail) }
    public static func missingChannelId(_ detail: String) -> APNsError { APNsError(.missingChannelId, detail) }
    public static func badChannelId(_ detail: String) -> APNsError { APNsError(.badChannelId, detail) }
    public static func channelNotRegistered(_ detail: String) -> APNsError { APNsError(.channelNotRegistered, detail) }
    public static func missingPushType(_ detail: String) -> APNsError { APNsError(.missingPushType, detail) }
    public static func badRequestParams(_ detail: String) -> APNsError { APNsError(.badRequestParams, detail) }
    public static func cannotCreateChannelConfig(_ detail: String) -> APNsError { APNsError(.cannotCreateChannelConfig, detail) }
    public static func expiredProviderToken(_ detail: String) -> APNsError { APNsError(.expiredProviderToken, detail) }
    public static func invalidProviderToken(_ detail: String) -> APNsError { APNsError(.invalidProviderToken, detail) }
    public static func missingProviderToken(_ detail: String) -> APNsError { APNsError(.missingProviderToken, detail) }
    public static func topicMismatch(_ detail: String) -> APNsError { APNsError(.topicMismatch, detail) }
    public static func badPath(_ detail: String) -> APNsError { APNsError(.badPath, detail) }
    public static func methodNotAllowed(_ detail: String) -> APNsError { APNsError(.methodNotAllowed, detail) }
    public static func unregistered(since milliseconds: Int64, _ detail: String) -> APNsError {
        APNsError(.unregistered, timestamp: milliseconds, detail)
    }
    public static func expiredToken(since milliseconds: Int64, _ detail: String) -> APNsError {
        APNsError(.expiredToken, timestamp: milliseconds, detail)
    }
    public static func payloadTooLarge(_ detail: String) -> APNsError { APNsError(.payloadTooLarge, detail) }
    public static func tooManyProviderTokenUpdates(_ detail: String) -> APNsError { APNsError(.tooManyProviderTokenUpdates, detail) }
    public static func tooManyRequests(_ detail: String) -> APNsError { APNsError(.tooManyRequests, detail) }
    public static func internalServerError(_ detail: String) -> APNsError { APNsError(.internalServerError, detail) }
    public static func serviceUnavailable(_ detail: String) -> APNsError { APNsError(.serviceUnavailable, detail) }
}
