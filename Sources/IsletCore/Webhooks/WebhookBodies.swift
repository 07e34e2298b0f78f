import Foundation

/// `POST /v1/apps/{bundleId}/webhooks`.
public struct CreateWebhookBody: Codable, Hashable, Sendable {
    public var url: String
    /// Event types, families (`activity.*`) or `*`; all when absent.
    public var events: [String]?
    public var description: String?

    public init(url: String, events: [String]? = nil, description: String? = nil) {
        self.url = url
        self.events = events
        self.description = description
    }
}

/// `PATCH /v1/apps/{bundleId}/webhooks/{id}`: what changes; absent fields stay as they are.
public struct UpdateWebhookBody: Codable, Hashable, Sendable {
    public var url: String?
    public var events: [String]?
    public var description: String?
    public var enabled: Bool?

    public init(url: String? = nil, events: [String]? = nil, description: String? = nil, enabled: Bool? = nil) {
        self.url = url
        self.events = events
        self.description = description
        self.enabled = enabled
    }
}

/// `POST …/webhooks/{id}/rotate-secret`.
public struct RotateWebhookSecretBody: Codable, Hashable, Sendable {
    /// Seconds the previous secret keeps signing beside the new one (86,400 when absent; 0: not at all).
    public var keepPreviousFor: Double?

    public init(keepPreviousFor: Double? = nil) {
        self.keepPreviousFor = keepPreviousFor
    }
}

/// `POST …/webhooks/{id}/replay`: from an event (its id, `evt_…` or the number) or a time
/// (ISO 8601, or Unix seconds as a number).
public struct ReplayWebhookBody: Codable, Hashable, Sendable {
    public var since: String

    public init(since: String) {
        self.since = since
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if let number = try? container.decode(Double.self, forKey: .since) {
            since = String(number)
        } else {
            since = try container.decode(String.self, forKey: .since)
        }
    }

    /// The event id, or the time, `since` names: a time within the dates every body accepts
    /// (`WireFormat.isAcceptedDate`), written as Unix seconds or in ISO 8601.
    public func parsed() throws -> (event: EventID?, time: Date?) {
        let text = since.hasPrefix("evt_") ? String(since.dropFirst(4)) : since
        if let id = EventID(text), id > 0 { return (id, nil) }
        let date = Double(since).map { Date(timeIntervalSince1970: $0) } ?? (try? Date(since, strategy: .iso8601))
        if let date, WireFormat.isAcceptedDate(date.timeIntervalSince1970) { return (nil, date) }
        throw IsletError(
            .invalidRequest, "since: an event id (evt_123 or 123), or a time: ISO 8601, or \(WireFormat.dateRangeText)."
        )
    }
}

/// A webhook endpoint as the API answers it: never its secret, but in the answer that made it
/// (`secret`).
public struct WebhookEndpointView: Codable, Hashable, Sendable {
    public struct Failing: Codable, Hashable, Sendable {
        public var event: String
        public var attempts: Int
        public var since: Date?
        public var nextAttemptAt: Date?
    }

    public var id: String
    public var bundleId: BundleID
    public var url: String
    public var description: String
    public var events: [String]
    public var enabled: Bool
    public var disabledReason: String?
    /// The last event of the log it has dealt with.
    public var cursor: String
    public var failing: Failing?
    /// While a rotated secret still signs beside the new one.
    public var previousSecretUntil: Date?
    public var createdAt: Date
    public var updatedAt: Date
    /// Only in the answer that made it (creation, rotation).
    public var secret: String?

    public init(_ endpoint: WebhookEndpoint, showingSecret: Bool = false, now: Date) {
        id = endpoint.id
        bundleId = endpoint.bundleId
        url = endpoint.url
        description = endpoint.description
        events = endpoint.events.names
        enabled = endpoint.enabled
        disabledReason = endpoint.disabledReason
        cursor = "evt_\(endpoint.cursor)"
        failing = endpoint.failingEvent.map {
            Failing(event: "evt_\($0)", attempts: endpoint.attempts, since: endpoint.failingSince, nextAttemptAt: endpoint.nextAttemptAt)
        }
        previousSecretUntil = endpoint.previousSecretUntil.flatMap { $0 > now ? $0 : nil }
        createdAt = endpoint.createdAt
        updatedAt = endpoint.updatedAt
        secret = showingSecret ? endpoint.secret : nil
    }
}
