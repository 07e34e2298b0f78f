import Foundation
import IsletCore

/// `islet webhooks listen` (docs/webhooks.md, "Listening from a laptop"): an endpoint whose
/// events go down the WebSocket of a session on this node, signed as any endpoint's, rather
/// than to a URL. It lives as long as its session: this node holds its lease and renews it
/// while the session is open, no other node takes it over, and it is deleted when the
/// session ends — or, after a crash, by the next dispatcher to find its lease run out.
extension Engine {
    /// Makes an endpoint for a listening session on this node, from the next event on.
    public func openWebhookListener(bundleId: BundleID, events: WebhookEventSelection, description: String) async throws -> WebhookEndpoint {
        let node = webhooks.node
        let lease = settings.webhooks.lease
        defer { webhooks.endpointsChanged() }
        return try await write { tx in
            _ = try tx.requireApp(bundleId)
            guard try tx.webhookEndpoints(bundleId: bundleId).count < Self.maximumWebhookEndpoints else {
                throw IsletError(.invalidRequest, "\(bundleId) has \(Self.maximumWebhookEndpoints) webhook endpoints, the most an app may have.")
            }
            let id = WebhookEndpoint.newID()
            let endpoint = WebhookEndpoint(
                id: id, bundleId: bundleId, url: WebhookEndpoint.listenerScheme + id, description: description, events: events,
                secret: WebhookSecret.generate().text, cursor: try tx.lastEventID(), leaseOwner: node,
                leaseUntil: tx.now.addingTimeInterval(lease), createdAt: tx.now, updatedAt: tx.now
            )
            try tx.putWebhookEndpoint(endpoint)
            return endpoint
        }
    }

    /// How often a listening session renews its lease: four times a lease.
    public var webhookListenerRenewal: TimeInterval { settings.webhooks.lease / 4 }

    /// Keeps a listening session's endpoint on this node for another lease; false once it is gone.
    public func renewWebhookListener(_ id: String) async throws -> Bool {
        let node = webhooks.node
        let lease = settings.webhooks.lease
        return try await write { tx in
            guard var endpoint = try tx.webhookEndpoint(id), endpoint.isListener, endpoint.leaseOwner == node else { return false }
            endpoint.leaseUntil = tx.now.addingTimeInterval(lease)
            try tx.putWebhookEndpoint(endpoint)
            return true
        }
    }

    /// Deletes a listening session's endpoint as its session ends.
    public func closeWebhookListener(_ id: String) async throws {
        defer { webhooks.endpointsChanged() }
        try await write { tx in
            guard let endpoint = try tx.webhookEndpoint(id), endpoint.isListener else { return }
            _ = try tx.deleteWebhookEndpoint(id)
        }
    }

    /// Deletes listening sessions' endpoints whose session is gone: on a store this process
    /// alone writes, every one this node does not hold (made before a restart); on a shared
    /// one, those whose lease ran out (their node died).
    func removeAbandonedWebhookListeners(_ endpoints: [WebhookEndpoint]) async throws {
        let node = webhooks.node
        let shared = store.isShared
        let now = clock.now()
        let abandoned = endpoints.filter { endpoint in
            endpoint.isListener && (shared ? !(endpoint.leaseUntil.map { $0 > now } ?? false) : endpoint.leaseOwner != node)
        }
        guard !abandoned.isEmpty else { return }
        defer { webhooks.endpointsChanged() }
        try await write { tx in
            for endpoint in abandoned {
                // Renewed since it was read: alive after all.
                guard let stored = try tx.webhookEndpoint(endpoint.id), stored.leaseUntil == endpoint.leaseUntil else { continue }
                _ = try tx.deleteWebhookEndpoint(endpoint.id)
            }
        }
    }
}
