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

    // Who is asking.
    case unauthorized
    case forbidden

    // What is asked for.
    case appNotFound
    case appAlreadyExists
    case deviceNotFound
    case deviceAlreadyExists
    case activityNotFound

    // ActivityKit's ActivityAuthorizationError.
    case attributesTooLarge
    case denied
    case targetMaximumExceeded
    case globalMaximumExceeded
    case unsupported

    // Lifecycle rules: the request was understood, and the rules say no.
    case activityEnded
    case activityDismissed
    case activityPending
    case olderTimestamp
    case timestampTooFarAhead

    // The server's own trouble.
    case internalError
    case unavailable
}

/// Why an update (or an end's final content) was ignored. Ignored updates are recorded in the
/// activity's history, never dropped silently.
public enum IgnoreReason: String, Codable, Sendable, CaseIterable {
    /// Its timestamp is older than the last applied update's.
    case olderTimestamp
    /// Its timestamp is further in the future than the rules allow.
    case timestampTooFarAhead
    /// The activity has ended.
    case activityEnded
    /// The activity has been dismissed.
    case activityDismissed

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
        }
    }
}
