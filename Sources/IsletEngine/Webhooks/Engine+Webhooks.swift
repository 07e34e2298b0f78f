import Foundation
import IsletCore

/// How webhooks are sent (docs/webhooks.md).
public struct WebhookSettings: Sendable, Equatable {
    /// Whether this node sends webhooks (another node on the same database may).
    public var enabled = true
    /// Lets endpoints reach private, loopback and link-local addresses over https.
    public var allowPrivateNetworks = false
    /// The waits before each attempt after the first, in seconds: at once, 5 s, 5 min, 30 min,
    /// 2 h, 5 h, 10 h, 10 h (Standard Webhooks' and Svix's schedule).
    public var retrySchedule: [TimeInterval] = [0, 5, 300, 1_800, 7_200, 18_000, 36_000, 36_000]
    /// The longest a request may take, in seconds.
    public var timeout: TimeInterval = 5
    /// An endpoint whose oldest failing event has failed this long is disabled, in seconds.
    public var disableAfter: TimeInterval = 3 * 86_400
    /// How long a rotated secret keeps signing beside the new one by default, in seconds.
    public var keepPreviousSecret: TimeInterval = 86_400
    /// How long a node keeps an endpoint once it sends its events, in seconds: on several nodes,
    /// one sends each endpoint's events, and another takes them over this long after it stops.
    /// A round sends for at most half of it less a request's `timeout`, so it is more than twice that.
    public var lease: TimeInterval = 30

    public init() {}
}

/// What `PATCH …/webhooks/{id}` may change.
public struct WebhookChange: Sendable {
    public var url: String?
    public var events: WebhookEventSelection?
    public var description: String?
    public var enabled: Bool?

    public init(url: String? = nil, events: WebhookEventSelection? = nil, description: String? = nil, enabled: Bool? = nil) {
        self.url = url
        self.events = events
        self.description = description
        self.enabled = enabled
    }
}

extension Engine {
    // MARK: Webhooks

    /// The most endpoints an app may have.
    public static let maximumWebhookEndpoints = 20
    /// The longest description.
    public static let maximumWebhookDescription = 500

    /// Makes an endpoint for an app's events from now on; its secret is in the answer, and only
    /// there.
    public func createWebhook(bundleId: BundleID, url: String, events: WebhookEventSelection, description: String) async throws -> WebhookEndpoint {
        let checked = try WebhookURL(url, allowPrivateNetworks: settings.webhooks.allowPrivateNetworks)
        try Self.checkWebhookDescription(description)
        defer { webhooks.endpointsChanged() }
        return try await write { tx in
            _ = try tx.requireApp(bundleId)
            guard try tx.webhookEndpoints(bundleId: bundleId).count < Self.maximumWebhookEndpoints else {
                throw IsletError(.invalidRequest, "\(bundleId) has \(Self.maximumWebhookEndpoints) webhook endpoints, the most an app may have.")
            }
            let endpoint = WebhookEndpoint(
                id: WebhookEndpoint.newID(), bundleId: bundleId, url: checked.text, description: description, events: events,
                secret: WebhookSecret.generate().text, cursor: try tx.lastEventID(), createdAt: tx.now, updatedAt: tx.now
            )
            try tx.putWebhookEndpoint(endpoint)
            return endpoint
        }
    }

    /// An app's endpoints.
    public func webhooks(bundleId: BundleID) async throws -> [WebhookEndpoint] {
        try await read { store in
            _ = try store.requireApp(bundleId)
            return try store.webhookEndpoints(bundleId: bundleId)
        }
    }

    /// One of an app's endpoints.
    public func webhook(_ id: String, bundleId: BundleID) async throws -> WebhookEndpoint {
        try await read { store in try Self.requireWebhook(id, bundleId: bundleId, in: store) }
    }

    /// Changes an endpoint. Enabling one that was disabled resumes it from its cursor and
    /// clears its failure.
    public func updateWebhook(_ id: String, bundleId: BundleID, change: WebhookChange) async throws -> WebhookEndpoint {
        let url = try change.url.map { try WebhookURL($0, allowPrivateNetworks: settings.webhooks.allowPrivateNetworks).text }
        if let description = change.description { try Self.checkWebhookDescription(description) }
        defer { webhooks.endpointsChanged() }
        return try await write { tx in
            var endpoint = try Self.requireWebhook(id, bundleId: bundleId, in: tx)
            if url != nil, endpoint.isListener {
                throw IsletError(.invalidRequest, "A listening session's endpoint (islet webhooks listen) keeps its address; it ends with its session.")
            }
            if let url { endpoint.url = url }
            if let events = change.events { endpoint.events = events }
            if let description = change.description { endpoint.description = description }
            if let enabled = change.enabled {
                if enabled && !endpoint.enabled {
                    endpoint.disabledReason = nil
                    endpoint.failingSince = nil
                    endpoint.nextAttemptAt = nil
                    endpoint.attempts = 0
                }
                endpoint.enabled = enabled
            }
            endpoint.updatedAt = tx.now
            try tx.putWebhookEndpoint(endpoint)
            return endpoint
        }
    }

    /// Removes an endpoint and its attempt log.
    public func deleteWebhook(_ id: String, bundleId: BundleID) async throws {
        defer { webhooks.endpointsChanged() }
        try await write { tx in
            _ = try Self.requireWebhook(id, bundleId: bundleId, in: tx)
            _ = try tx.deleteWebhookEndpoint(id)
        }
    }

    /// Gives an endpoint a new secret; the old one keeps signing beside it for `keepPrevious`
    /// seconds (0: at once no more).
    public func rotateWebhookSecret(_ id: String, bundleId: BundleID, keepPrevious: TimeInterval?) async throws -> WebhookEndpoint {
        let keep = keepPrevious ?? settings.webhooks.keepPreviousSecret
        guard keep >= 0, keep <= 30 * 86_400 else {
            throw IsletError(.invalidRequest, "keepPreviousFor: between 0 and 2592000 seconds (30 days).")
        }
        defer { webhooks.endpointsChanged() }
        return try await write { tx in
            var endpoint = try Self.requireWebhook(id, bundleId: bundleId, in: tx)
            endpoint.previousSecret = keep > 0 ? endpoint.secret : nil
            endpoint.previousSecretUntil = keep > 0 ? tx.now.addingTimeInterval(keep) : nil
            endpoint.secret = WebhookSecret.generate().text
            endpoint.updatedAt = tx.now
            try tx.putWebhookEndpoint(endpoint)
            return endpoint
        }
    }

    /// Sends an endpoint's events again from `since` (an event id, or the first event at or
    /// after a time): its cursor moves back, and its failure is cleared.
    public func replayWebhook(_ id: String, bundleId: BundleID, sinceEvent: EventID?, sinceTime: Date?) async throws -> WebhookEndpoint {
        defer { webhooks.endpointsChanged() }
        return try await write { tx in
            var endpoint = try Self.requireWebhook(id, bundleId: bundleId, in: tx)
            var cursor = max(0, (sinceEvent ?? 1) - 1)
            if let sinceTime {
                // The last event before the time: a page of the app's events at a time.
                var after: EventID = 0
                cursor = 0
                while let page = Optional(try tx.events(after: after, filter: EventFilter(bundleId: bundleId), limit: 1_000)), !page.isEmpty {
                    let before = page.prefix { (try? $0.decoded().time).map { $0 < sinceTime } ?? true }
                    if let last = before.last { cursor = last.id }
                    if before.count < page.count { break }
                    after = page[page.count - 1].id
                }
            }
            endpoint.cursor = min(cursor, endpoint.cursor)
            endpoint.failingEvent = nil
            endpoint.failingSince = nil
            endpoint.nextAttemptAt = nil
            endpoint.attempts = 0
            endpoint.updatedAt = tx.now
            try tx.putWebhookEndpoint(endpoint)
            return endpoint
        }
    }

    /// An endpoint's attempts, newest first.
    public func webhookAttempts(_ id: String, bundleId: BundleID, deadLettersOnly: Bool, before: Int64?, limit: Int) async throws -> [WebhookAttempt] {
        try await read { store in
            _ = try Self.requireWebhook(id, bundleId: bundleId, in: store)
            return try store.webhookAttempts(endpointId: id, deadLettersOnly: deadLettersOnly, before: before, limit: limit)
        }
    }

    /// Sends a `webhook.test` event to an endpoint now (enabled or not), and answers its attempt,
    /// which the attempt log keeps.
    public func testWebhook(_ id: String, bundleId: BundleID) async throws -> WebhookAttempt {
        guard let webhookTransport else {
            throw IsletError(.unavailable, "This server sends no webhooks (no transport; webhooks.enabled is off on this node).")
        }
        let endpoint = try await webhook(id, bundleId: bundleId)
        let now = clock.now()
        var data = WebhookEvent.Data()
        data.message = "A test event from Islet, sent by POST /v1/apps/\(bundleId)/webhooks/\(id)/test."
        let event = WebhookEvent(
            id: "evt_test_" + WebhookEndpoint.newID().dropFirst(3), type: .webhookTest, eventId: 0, createdAt: now, bundleId: bundleId,
            activityId: nil, deviceId: nil, data: data
        )
        let answer = await webhookTransport.send(event, to: endpoint, at: now, timeout: settings.webhooks.timeout)
        metrics.webhookAnswered(answer)
        let attempt = WebhookAttempt(
            endpointId: id, event: event.id, type: .webhookTest, attempt: 1, at: now, status: answer.status, error: answer.error,
            latencyMs: answer.latencyMs, response: answer.response
        )
        try await write { tx in try tx.addWebhookAttempts([attempt]) }
        return attempt
    }

    static func requireWebhook(_ id: String, bundleId: BundleID, in store: any StoreReading) throws -> WebhookEndpoint {
        _ = try store.requireApp(bundleId)
        guard let endpoint = try store.webhookEndpoint(id), endpoint.bundleId == bundleId else {
            throw IsletError(.webhookNotFound, "\(bundleId) has no webhook endpoint \(id.prefix(64)).")
        }
        return endpoint
    }

    private static func checkWebhookDescription(_ description: String) throws {
        guard description.count <= maximumWebhookDescription else {
            throw IsletError(.invalidRequest, "description: at most \(maximumWebhookDescription) characters.")
        }
    }
}
