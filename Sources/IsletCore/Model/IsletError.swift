/// A refusal with a stable reason a program can switch on and a message a person can act on.
///
/// Reasons never change once released; messages may. Adapters map each reason to their own
/// status (an HTTP status for REST, Apple's status for the APNs endpoint).
public struct IsletError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The stable name of what went wrong.
    public var reason: ErrorReason
    /// What went wrong and what to do about it, for a person.
    public var message: String

    /// Creates an error.
    public init(_ reason: ErrorReason, _ message: String) {
        self.reason = reason
        self.message = message
    }

    public var description: String { "\(reason.rawValue): \(message)" }
}

/// Every reason Islet gives for refusing a request. See `docs/errors.md` for each one.
public enum ErrorReason: String, Codable, Sendable, CaseIterable {
    // Requests that cannot be understood.
    case malformedJSON
    case invalidRequest
    case payloadTooLarge
    case routeNotFound
    case methodNotAllowed

    // Who is asking.
    case unauthorized
    case forbidden

    // What is asked for.
    case appNotFound
    case appAlreadyExists
    case deviceNotFound
    case deviceAlreadyExists
    case activityNotFound
    case keyNotFound
    case channelNotFound
    case layoutNotFound
    case deliveryNotFound
    case webhookNotFound
    case userNotFound
    case sendNotFound
    /// A key would pass Apple's limits of its kind in its environment (`KeySet`), or an app's
    /// limit of client keys.
    case tooManyKeys
    /// A caller past a rate it may not pass (docs/installations.md, "Limits"): wait and retry.
    case rateLimited
    /// A user id an app's side gave without its backend's signature (docs/installations.md).
    case userNotVerified

    // ActivityKit's ActivityAuthorizationError.
    case attributesTooLarge
    case denied
    case targetMaximumExceeded
    case globalMaximumExceeded

    // Payloads that do not fit the activity type's registered shape, as a device fails to decode them.
    case attributesMismatch
    case contentStateMismatch
    case invalidPayload
    case invalidLayout

    // The push budget.
    case budgetExceeded

    // Lifecycle rules: the request was understood, and the rules say no.
    case activityEnded
    case activityDismissed
    case activityPending
    case olderTimestamp
    case timestampTooFarAhead
    case startTooFarAhead

    // Idempotency-Key: the key was used for another request, or its first request runs.
    case idempotencyKeyReused
    case idempotencyKeyInUse

    // The server's own trouble.
    case internalError
    case unavailable
    case appleRefused
}

/// Why an update (or an end's final content, or a push-to-start) was ignored. Ignored updates
/// are recorded in the activity's (or the device's) history, never dropped silently.
public enum IgnoreReason: String, Codable, Sendable, CaseIterable {
    /// Its timestamp is older than the last applied update's.
    case olderTimestamp
    /// Its timestamp is further in the future than the rules allow.
    case timestampTooFarAhead
    /// The activity has ended.
    case activityEnded
    /// The activity has been dismissed.
    case activityDismissed
    /// Its content state does not fit the activity type's shape: the device cannot decode it.
    case contentStateMismatch
    /// Its attributes do not fit the activity type's shape (push-to-start).
    case attributesMismatch
    /// The activity's hourly budget of priority-10 pushes is spent: the device throttles it.
    case budgetExceeded
    /// The payload lacks what the event needs (a push-to-start without attributes, …).
    case invalidPayload
    /// A push-to-start the device refused: Live Activities are off for the app.
    case denied
    /// A push-to-start whose attributes and content state are over the size limit.
    case attributesTooLarge
    /// A push-to-start beyond the app's limit of live activities on the device.
    case targetMaximumExceeded
    /// A push-to-start beyond the device's limit of live activities.
    case globalMaximumExceeded
    /// A push-to-start that names a broadcast channel that does not exist.
    case channelNotFound

    /// The error a caller who asked directly (REST, SDK) receives.
    public var error: IsletError {
        switch self {
        case .olderTimestamp:
            IsletError(.olderTimestamp, "The update's timestamp is older than the last applied update's; it was ignored.")
        case .timestampTooFarAhead:
            IsletError(.timestampTooFarAhead, "The update's timestamp is too far in the future; it was ignored.")
        case .activityEnded:
            IsletError(.activityEnded, "The activity has ended; ended activities ignore updates.")
        case .activityDismissed:
            IsletError(.activityDismissed, "The activity has been dismissed; dismissed activities ignore updates.")
        case .contentStateMismatch:
            IsletError(.contentStateMismatch, "The content state does not fit the activity type's registered shape.")
        case .attributesMismatch:
            IsletError(.attributesMismatch, "The attributes do not fit the activity type's registered shape.")
        case .budgetExceeded:
            IsletError(.budgetExceeded, "The activity's hourly budget of priority-10 pushes is spent; the update was throttled.")
        case .invalidPayload:
            IsletError(.invalidPayload, "The payload lacks what its event needs.")
        case .denied, .attributesTooLarge, .targetMaximumExceeded, .globalMaximumExceeded, .channelNotFound:
            IsletError(ErrorReason(rawValue: rawValue)!, "The device refused to start the activity (\(rawValue)).")
        }
    }

    /// The reason a refusal of a push-to-start is recorded with, if it is one a device drops.
    public init?(refusal: IsletError) {
        if refusal.reason == .invalidRequest {
            self = .invalidPayload
        } else if let reason = IgnoreReason(rawValue: refusal.reason.rawValue) {
            self = reason
        } else {
            return nil
        }
    }
}
