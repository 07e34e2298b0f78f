import Foundation

/// An app's webhook endpoint (docs/webhooks.md): where its events go, which ones, signed with
/// what, and how far it has got in the event log.
public struct WebhookEndpoint: Hashable, Sendable {
    /// `wh_` and 26 base32 characters.
    public let id: String
    public let bundleId: BundleID
    public var url: String
    public var description: String
    public var events: WebhookEventSelection
    public var enabled: Bool
    /// Why Islet disabled it (failing for `webhooks.disableAfter`), if it did.
    public var disabledReason: String?
    /// The signing secret, `whsec_…` (never in an answer but the one that made it).
    public var secret: String
    /// The secret before the last rotation, signing beside the new one until `previousSecretUntil`.
    public var previousSecret: String?
    public var previousSecretUntil: Date?
    /// The last event of the log it has dealt with: sent (2xx), or given up on.
    public var cursor: EventID
    /// The event after the cursor that is failing, its attempts so far, since when, and when
    /// it is tried next.
    public var failingEvent: EventID?
    public var attempts: Int
    public var failingSince: Date?
    public var nextAttemptAt: Date?
    /// The node sending its events, and until when (docs/webhooks.md, "Several nodes").
    public var leaseOwner: String?
    public var leaseUntil: Date?
    public let createdAt: Date
    public var updatedAt: Date

    public init(
        id: String, bundleId: BundleID, url: String, description: String, events: WebhookEventSelection, enabled: Bool = true,
        disabledReason: String? = nil, secret: String, previousSecret: String? = nil, previousSecretUntil: Date? = nil,
        cursor: EventID, failingEvent: EventID? = nil, attempts: Int = 0, failingSince: Date? = nil, nextAttemptAt: Date? = nil,
        leaseOwner: String? = nil, leaseUntil: Date? = nil, createdAt: Date, updatedAt: Date
    ) {
        self.id = id
        self.bundleId = bundleId
        self.url = url
        self.description = description
        self.events = events
        self.enabled = enabled
        self.disabledReason = disabledReason
        self.secret = secret
        self.previousSecret = previousSecret
        self.previousSecretUntil = previousSecretUntil
        self.cursor = cursor
        self.failingEvent = failingEvent
        self.attempts = attempts
        self.failingSince = failingSince
        self.nextAttemptAt = nextAttemptAt
        self.leaseOwner = leaseOwner
        self.leaseUntil = leaseUntil
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// The secrets that sign a request at `now`: the current one, and the previous one while
    /// it is kept.
    public func signingSecrets(at now: Date) -> [String] {
        guard let previousSecret, let until = previousSecretUntil, until > now else { return [secret] }
        return [secret, previousSecret]
    }

    /// The URL scheme of a listening session's endpoint (`islet webhooks listen`): its events go
    /// down the session's WebSocket, on the node that holds it.
    public static let listenerScheme = "listen:"

    /// Whether it is a listening session's endpoint.
    public var isListener: Bool { url.hasPrefix(Self.listenerScheme) }

    /// Whether a node other than `node` sends its events at `now`.
    public func isLeased(toAnotherThan node: String, at now: Date) -> Bool {
        guard let leaseOwner, leaseOwner != node, let leaseUntil else { return false }
        return leaseUntil > now
    }

    /// A new endpoint id.
    public static func newID() -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567")
        var generator = SystemRandomNumberGenerator()
        return "wh_" + String((0..<26).map { _ in alphabet[Int(generator.next(upperBound: UInt8(32)))] })
    }
}

/// One request to a webhook endpoint and its answer, as the attempt log keeps it.
public struct WebhookAttempt: Hashable, Sendable, Codable {
    public var id: Int64
    public var endpointId: String
    /// The event's id (`evt_…`) and type.
    public var event: String
    public var type: WebhookEventType
    /// 1 for the first.
    public var attempt: Int
    public var at: Date
    /// The HTTP status, or `nil` when there was no answer.
    public var status: Int?
    /// The failure in words (a timeout, a refused connection, a refused address…), without
    /// tokens (`kept`).
    public var error: String?
    public var latencyMs: Double?
    /// The response's first bytes, without tokens (`kept`).
    public var response: String?
    /// The last attempt of an event given up on.
    public var deadLetter: Bool

    public init(
        id: Int64 = 0, endpointId: String, event: String, type: WebhookEventType, attempt: Int, at: Date, status: Int?, error: String?,
        latencyMs: Double?, response: String?, deadLetter: Bool = false
    ) {
        self.id = id
        self.endpointId = endpointId
        self.event = event
        self.type = type
        self.attempt = attempt
        self.at = at
        self.status = status
        self.error = error.map(Self.kept)
        self.latencyMs = latencyMs
        self.response = response.map(Self.kept)
        self.deadLetter = deadLetter
    }

    /// The most of a receiver's answer (or a listener's error) an attempt keeps, in bytes.
    public static let keptBytes = 256

    /// What an attempt keeps of a receiver's answer or a listener's error: its first `keptBytes`
    /// bytes, every token in them cut to 8 characters (`String.withoutTokens`). A receiver that
    /// quotes what it was sent — a validation error, a framework's echo — quotes the activity's
    /// push token, and the attempt log is read without a key on loopback (docs/security.md). The
    /// rule holds for rows an earlier version kept whole, as they are read.
    public static func kept(_ text: String) -> String {
        text.withoutTokens(cutTo: keptBytes)
    }

    /// Whether the endpoint took it (2xx).
    public var succeeded: Bool { status.map { (200..<300).contains($0) } ?? false }
}
