import Foundation
import IsletCore

/// Broadcast channels of an app that delivers to real phones: made and deleted at Apple (its
/// channel-management API) as well as here, and broadcasts sent to Apple through the outbox —
/// one request for every phone joined to the channel (docs/delivery.md, "Broadcast channels").
extension Engine {
    /// Creates a channel: at Apple first when the app delivers (in `environment`, or the one
    /// environment it has credentials for), with Apple's id; otherwise one of Islet's own.
    public func createDeliveredChannel(
        bundleId: BundleID, storagePolicy: Int, limit: Int, environment requested: APNsEnvironment?
    ) async throws -> BroadcastChannel {
        let credential = try await read { store -> StoredCredential? in
            _ = try store.requireApp(bundleId)
            let count = try store.channels(bundleId: bundleId).count
            guard count < limit else {
                throw IsletError(.invalidRequest, "\(bundleId) already has \(count) channels; the limit is \(limit).")
            }
            return try Self.channelCredential(store.deliveryCredentials(bundleId: bundleId), requested: requested, bundleId: bundleId)
        }
        guard let credential else {
            return try await createChannel(bundleId: bundleId, storagePolicy: storagePolicy, limit: limit)
        }
        let body = ChannelConfiguration(messageStoragePolicy: storagePolicy).body
        let answer = try await manageAtApple(credential, .createChannel(storagePolicy: storagePolicy), bundleId: bundleId, payload: body)
        guard answer.status == 201, let id = answer.channelId, !id.isEmpty else {
            throw Self.refusal(answer, doing: "create a channel")
        }
        return try await write { tx in
            let channel = BroadcastChannel(
                id: id, bundleId: bundleId, storagePolicy: storagePolicy, createdAt: tx.now, environment: credential.credential.environment
            )
            try tx.insertChannel(channel)
            return channel
        }
    }

    /// Deletes a channel, at Apple too when it was made there (a channel Apple no longer knows
    /// is deleted here all the same).
    /// - Returns: Whether it existed.
    public func deleteDeliveredChannel(_ id: String, bundleId: BundleID) async throws -> Bool {
        let found = try await read { store -> (BroadcastChannel, StoredCredential?)? in
            guard let channel = try store.channel(id, bundleId: bundleId) else { return nil }
            guard let environment = channel.environment else { return (channel, nil) }
            guard let credential = try store.deliveryCredentials(bundleId: bundleId).first(where: { $0.credential.environment == environment })
            else {
                throw IsletError(
                    .invalidRequest,
                    "Channel \(id) was made at Apple (\(environment.rawValue)) and \(bundleId) has no credentials for it any more: register them again (PUT /v1/apps/\(bundleId)/delivery) to delete it there."
                )
            }
            return (channel, credential)
        }
        guard let (_, credential) = found else { return false }
        if let credential {
            let answer = try await manageAtApple(credential, .deleteChannel(id), bundleId: bundleId, payload: "")
            guard answer.status == 204 || answer.status == 200 || answer.reason == "ChannelNotRegistered" else {
                throw Self.refusal(answer, doing: "delete channel \(id)")
            }
        }
        return try await deleteChannel(id, bundleId: bundleId)
    }

    /// Broadcasts an update or an end from the app: applied to the activities here that joined
    /// the channel, and — for a channel made at Apple — one request to Apple, through the
    /// outbox, reaching every phone joined to it. A channel that keeps its latest message keeps
    /// this one for eight hours.
    @discardableResult
    public func broadcast(_ change: Activity.PushedChange, channelId: String, bundleId: BundleID) async throws -> [Outcome] {
        // The app's own request: content a device would drop is refused here, before anything.
        switch change {
        case .update(let update): try update.content.validate()
        case .end(let end): try end.content?.validate()
        }
        let rules = self.rules
        return try await write { tx in
            _ = try tx.requireApp(bundleId)
            guard let channel = try tx.channel(channelId, bundleId: bundleId) else {
                throw IsletError(.channelNotFound, "\(bundleId) has no channel \(channelId).")
            }
            return try Self.broadcast(change, on: channel, rules: rules, in: tx)
        }
    }

    /// A broadcast from the app, in its transaction: kept when the channel keeps its latest
    /// message, applied to the activities here that joined it, and one request to Apple for a
    /// channel made there. The app's broadcast route and a send whose phones are the channel's
    /// (docs/audiences.md) both go this way.
    static func broadcast(_ change: Activity.PushedChange, on channel: BroadcastChannel, rules: LifecycleRules, in tx: any Transaction) throws -> [Outcome] {
        if channel.storagePolicy == 1 {
            try tx.storeMessage(change, channelId: channel.id, expires: tx.now.addingTimeInterval(BroadcastChannel.messageLifetime))
        }
        let outcomes = try reach(channel, with: change, rules: rules, in: tx)
        if channel.environment != nil {
            try tx.deliverBroadcast(change, on: channel)
        }
        return outcomes
    }

    /// The credential a channel is made with at Apple, if the app delivers.
    private static func channelCredential(
        _ credentials: [StoredCredential], requested: APNsEnvironment?, bundleId: BundleID
    ) throws -> StoredCredential? {
        if let requested {
            guard let key = credentials.signer(in: requested) ?? credentials.keys(in: requested).last else {
                throw IsletError(
                    .invalidRequest, "\(bundleId) has no credentials for \(requested.rawValue): PUT /v1/apps/\(bundleId)/delivery first."
                )
            }
            return key
        }
        let environments = Set(credentials.map(\.credential.environment))
        guard environments.count <= 1 else {
            throw IsletError(
                .invalidRequest,
                "\(bundleId) delivers in both environments: say which one the channel is made in (\"environment\": \"development\" or \"production\")."
            )
        }
        return environments.first.flatMap { credentials.signer(in: $0) ?? credentials.keys(in: $0).last }
    }

    private func manageAtApple(
        _ credential: StoredCredential, _ target: OutboundRequest.Target, bundleId: BundleID, payload: String
    ) async throws -> TransportAnswer {
        guard let transport else {
            throw IsletError(.unavailable, "This server sends nothing to Apple (it has no delivery transport).")
        }
        return await transport.send(OutboundRequest(
            credential: credential, target: target, bundleId: bundleId, payload: payload, priority: 10, expiration: nil,
            apnsId: UUID().uuidString.lowercased()
        ))
    }

    private static func refusal(_ answer: TransportAnswer, doing what: String) -> IsletError {
        guard let status = answer.status else {
            return IsletError(.unavailable, "Apple's channel management did not answer when asked to \(what): \(answer.failure.map { "\($0)" } ?? "no answer").")
        }
        return IsletError(.appleRefused, "Apple refused to \(what): \(status) \(answer.reason ?? "(no reason)").")
    }
}

extension Transaction {
    /// The one request a broadcast makes to Apple, in the outbox with the channel's order.
    func deliverBroadcast(_ change: Activity.PushedChange, on channel: BroadcastChannel) throws {
        let event: Delivery.Event
        let payload: JSONValue
        var alert = false
        switch change {
        case .update(let update):
            event = .update
            payload = Payloads.update(update.content, timestamp: update.timestamp ?? now, alert: update.alert)
            alert = update.alert != nil
        case .end(let end):
            event = .end
            let dismissal = Deliveries.dismissalDate(end.dismissalPolicy, now: now, decided: nil)
            payload = Payloads.end(end.content ?? ActivityContent(state: [:]), timestamp: end.timestamp ?? now, dismissal: dismissal)
        }
        let delivery = Delivery(
            order: .channel(channel.id), activityId: nil, bundleId: channel.bundleId, deviceId: nil,
            channelId: channel.id, event: event, payload: try Payloads.text(payload, limit: Payloads.maximumBroadcastSize), alert: alert,
            expiration: now.addingTimeInterval(Deliveries.lifetime), nextAttemptAt: now, createdAt: now, traceparent: TraceParent.current()
        )
        let id = try insertDelivery(delivery)
        try reportBroadcast(DeliveryReport(delivery: id, event: event.rawValue, outcome: .queued, target: "channel \(channel.id)"), channel: channel.id, bundleId: channel.bundleId)
        effects.deliveriesReady = true
    }

    /// Logs a broadcast's line on every activity here that joined the channel.
    func reportBroadcast(_ report: DeliveryReport, channel: String, bundleId: BundleID) throws {
        for activity in try liveActivities(channelId: channel, bundleId: bundleId) {
            try self.report(report, of: activity)
        }
    }
}
