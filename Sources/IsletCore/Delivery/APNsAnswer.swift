/// What one request to APNs came to, as the sender reads it: Apple took it, Apple refused it
/// (a status and, usually, one of Apple's reasons), or no answer came — each way a transport
/// fails a case of its own. `Delivery.handle` decides what follows.
public enum APNsAnswer: Hashable, Sendable {
    /// Apple took it: 200 (201 and 204 from channel management).
    case accepted(status: Int)
    /// Apple refused it.
    case refused(APNsRefusal)
    /// No answer came, or nothing was sent.
    case failed(TransportFailure)

    /// The HTTP status, when there was an answer.
    public var status: Int? {
        switch self {
        case .accepted(let status): status
        case .refused(let refusal): refusal.status
        case .failed: nil
        }
    }

    /// The `reason` of a refusal's body, as Apple wrote it.
    public var reason: String? {
        if case .refused(let refusal) = self { return refusal.text }
        return nil
    }

    /// The answer an HTTP status and body make: a 2xx is taken, anything else refused.
    public init(status: Int, reason: String?, timestamp: Int64?) {
        self = (200..<300).contains(status) ? .accepted(status: status) : .refused(APNsRefusal(status: status, reason: reason, timestamp: timestamp))
    }
}

/// Apple's refusal of a request: `{"reason": "…"}` with its status, and for 410 the time the
/// token stopped being valid.
public struct APNsRefusal: Hashable, Sendable {
    /// The HTTP status.
    public var status: Int
    /// The reason, when it is one of Apple's.
    public var reason: APNsReason?
    /// The reason as it came (one Apple added since, or a proxy's), when there was one.
    public var text: String?
    /// For 410: when the token stopped being valid, in milliseconds since 1970.
    public var timestamp: Int64?

    public init(status: Int, reason text: String?, timestamp: Int64? = nil) {
        self.status = status
        self.text = text
        self.reason = text.flatMap(APNsReason.init(rawValue:))
        self.timestamp = timestamp
    }

    /// One of Apple's refusals, with the status Apple gives it.
    public init(_ reason: APNsReason, timestamp: Int64? = nil) {
        self.init(status: reason.statusCode, reason: reason.rawValue, timestamp: timestamp)
    }
}

/// Why no answer came to a request.
public struct TransportFailure: Error, Hashable, Sendable, CustomStringConvertible {
    /// Where it failed.
    public enum Kind: String, Hashable, Sendable, CaseIterable {
        /// No connection could be made: the name, the address, the port refused.
        case connect
        /// The TLS handshake failed: the server's certificate is not trusted, or TLS itself.
        case tls
        /// The connection closed or was reset while the request was on it (a `GOAWAY`, a
        /// server that went away).
        case connectionLost
        /// No whole answer within the request's deadline.
        case timedOut
        /// Nothing was sent: the credential cannot be used (its address, authority or key
        /// cannot be read), and no request of it can go until it is registered again.
        case unusableCredential
        /// Anything else that ended the request without an answer.
        case other
    }

    public var kind: Kind
    /// The failure in words.
    public var detail: String

    public init(_ kind: Kind, _ detail: String) {
        self.kind = kind
        self.detail = detail
    }

    public var description: String {
        switch kind {
        case .connect: "no connection: \(detail)"
        case .tls: "TLS failed: \(detail)"
        case .connectionLost: "the connection was lost before the answer: \(detail)"
        case .timedOut: "no answer in time: \(detail)"
        case .unusableCredential: "the credential cannot be used: \(detail)"
        case .other: "no answer: \(detail)"
        }
    }
}
