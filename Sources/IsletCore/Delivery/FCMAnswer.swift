import Foundation

/// What one request to FCM's `messages:send` came to, as the sender reads it: FCM took it (and
/// named the message), FCM refused it, or no answer came. `Delivery.handle` decides what follows.
public enum FCMAnswer: Hashable, Sendable {
    /// 200: FCM took it; `name` is `projects/{project}/messages/{id}`.
    case accepted(name: String?)
    /// FCM refused it.
    case refused(FCMRefusal)
    /// No answer came, or nothing was sent.
    case failed(TransportFailure)

    /// The HTTP status, when there was an answer.
    public var status: Int? {
        switch self {
        case .accepted: 200
        case .refused(let refusal): refusal.status
        case .failed: nil
        }
    }

    /// The answer an HTTP status, body and `Retry-After` header make: a 2xx is taken (its body's
    /// `name` kept), anything else refused with what its error body says.
    public init(status: Int, body: Data, retryAfter: String?) {
        if (200..<300).contains(status) {
            self = .accepted(name: (try? JSONDecoder().decode(Accepted.self, from: body))?.name)
        } else {
            self = .refused(FCMRefusal(status: status, body: body, retryAfter: retryAfter))
        }
    }

    private struct Accepted: Decodable {
        var name: String?
    }
}

/// FCM's `errorCode`, in the `details[]` entry of type `google.firebase.fcm.v1.FcmError` of an
/// error body: every code FCM documents.
public enum FCMErrorCode: String, Hashable, Sendable, CaseIterable {
    case unspecifiedError = "UNSPECIFIED_ERROR"
    /// 400: the message is wrong; never retried as it is.
    case invalidArgument = "INVALID_ARGUMENT"
    /// 404: the app was uninstalled or the token expired.
    case unregistered = "UNREGISTERED"
    /// 403: the token belongs to another project.
    case senderIdMismatch = "SENDER_ID_MISMATCH"
    /// 429: a quota (the project's, or the device's 240 a minute and 5,000 an hour).
    case quotaExceeded = "QUOTA_EXCEEDED"
    /// 503: FCM is overloaded.
    case unavailable = "UNAVAILABLE"
    /// 500: FCM failed.
    case `internal` = "INTERNAL"
    /// 401: the APNs or web-push credentials behind FCM were refused.
    case thirdPartyAuthError = "THIRD_PARTY_AUTH_ERROR"

    /// The status FCM answers it with.
    public var statusCode: Int {
        switch self {
        case .unspecifiedError, .internal: 500
        case .invalidArgument: 400
        case .unregistered: 404
        case .senderIdMismatch: 403
        case .quotaExceeded: 429
        case .unavailable: 503
        case .thirdPartyAuthError: 401
        }
    }

    /// Google's status text for it (`error.status`).
    public var googleStatus: String {
        switch self {
        case .unspecifiedError, .internal: "INTERNAL"
        case .invalidArgument: "INVALID_ARGUMENT"
        case .unregistered: "NOT_FOUND"
        case .senderIdMismatch: "PERMISSION_DENIED"
        case .quotaExceeded: "RESOURCE_EXHAUSTED"
        case .unavailable: "UNAVAILABLE"
        case .thirdPartyAuthError: "UNAUTHENTICATED"
        }
    }
}

/// FCM's refusal of a request: its status and the error body's fields, read where the answer
/// enters; a body that is not FCM's (a proxy's page) leaves them `nil`.
public struct FCMRefusal: Hashable, Sendable {
    /// The HTTP status.
    public var status: Int
    /// `details[].errorCode`, when it is one FCM documents.
    public var errorCode: FCMErrorCode?
    /// `details[].errorCode` as it came (one FCM added since), when there was one.
    public var errorCodeText: String?
    /// `error.status`: Google's status text (`UNAUTHENTICATED`, `NOT_FOUND`…).
    public var googleStatus: String?
    /// `error.message`.
    public var message: String?
    /// `Retry-After`, in seconds, when FCM gave one (a number of seconds; an HTTP date is
    /// read as the seconds from `now` to it by the sender, not here).
    public var retryAfter: TimeInterval?

    public init(
        status: Int, errorCode: String? = nil, googleStatus: String? = nil, message: String? = nil, retryAfter: TimeInterval? = nil
    ) {
        self.status = status
        self.errorCodeText = errorCode
        self.errorCode = errorCode.flatMap(FCMErrorCode.init(rawValue:))
        self.googleStatus = googleStatus
        self.message = message
        self.retryAfter = retryAfter
    }

    /// One of FCM's refusals, with the status and status text FCM gives it.
    public init(_ code: FCMErrorCode, message: String? = nil, retryAfter: TimeInterval? = nil) {
        self.init(status: code.statusCode, errorCode: code.rawValue, googleStatus: code.googleStatus, message: message, retryAfter: retryAfter)
    }

    /// Reads an error body `{"error": {"code", "message", "status", "details": [{"@type", "errorCode"}]}}`
    /// and a `Retry-After` of whole seconds (a value that is not a sane number of seconds is
    /// ignored: it never becomes a wait of years).
    public init(status: Int, body: Data, retryAfter: String?) {
        let error = (try? JSONDecoder().decode(Body.self, from: body))?.error
        let code = error?.details?.first { $0.type?.hasSuffix("google.firebase.fcm.v1.FcmError") == true }?.errorCode
        self.init(
            status: status, errorCode: code, googleStatus: error?.status, message: error?.message,
            retryAfter: retryAfter.flatMap(Self.seconds)
        )
    }

    /// The refusal in a line: `404 UNREGISTERED (Requested entity was not found.)`.
    public var text: String {
        var text = "\(status) \(errorCodeText ?? googleStatus ?? "(no error code)")"
        if let message, !message.isEmpty { text += " (\(message))" }
        return text
    }

    /// `Retry-After` as whole seconds, 0 to a day.
    static func seconds(_ header: String) -> TimeInterval? {
        guard let seconds = Int(header.trimmingCharacters(in: .whitespaces)), (0...86_400).contains(seconds) else { return nil }
        return TimeInterval(seconds)
    }

    private struct Body: Decodable {
        var error: ErrorBody?
    }

    private struct ErrorBody: Decodable {
        var message: String?
        var status: String?
        var details: [Detail]?
    }

    private struct Detail: Decodable {
        var type: String?
        var errorCode: String?

        enum CodingKeys: String, CodingKey {
            case type = "@type"
            case errorCode
        }
    }
}
