import Foundation
import IsletCore

/// A phone, as `GET /v1/devices/{id}` shows it: the device and the tokens its apps reported.
public struct Phone: Sendable, Hashable {
    public var device: Device
    /// Its tokens, current and retired, newest first.
    public var tokens: [PhoneToken]
}

/// How delivery stands, for `/healthz` and the metrics.
public struct DeliveryHealth: Sendable, Hashable {
    /// Deliveries not finished (waiting, held or being sent).
    public var depth: Int
    /// When the oldest of them was written.
    public var oldest: Date?
    /// Credentials Apple refused, by app and environment, with why.
    public var refusedCredentials: [String]
    /// Why delivery is not keeping up, if it is not: `nil` when all is well.
    public var degraded: String?
    /// The same, naming no app, for those who may not see the apps (`GET /healthz` answers
    /// anyone): how many apps' credentials cannot be used, not which or why.
    public var degradedWithoutNames: String?
    /// Of the unfinished, those waiting to be tried again.
    public var retrying = 0
    /// Of the unfinished, those held.
    public var held = 0

    /// As the overview shows it.
    public var overview: DeliveryOverview {
        DeliveryOverview(status: degraded == nil ? "ok" : "degraded", reason: degraded, depth: depth, retrying: retrying, held: held, oldest: oldest)
    }
}

extension Engine {
    // MARK: Credentials

    /// Registers an app's credential for one environment, replacing every key the environment
    /// had. The key must already be checked (a P-256 key that signs). Held deliveries are released.
    public func putDeliveryCredential(_ stored: StoredCredential) async throws -> DeliveryCredential {
        try await addDeliveryKey(stored, replacingTheSet: true)
    }

    /// Adds a key to an app's set for its environment (docs/delivery.md, "Key sets"), within
    /// Apple's limits (`KeySet.check`), or replaces the one with its key id. Being the newest, it
    /// signs from now on; one without `url` sends where the environment's keys send. Held
    /// deliveries are released.
    public func addDeliveryKey(_ stored: StoredCredential, replacingTheSet: Bool = false) async throws -> DeliveryCredential {
        var stored = stored
        let key = stored.credential
        if key.kind == .topic {
            stored.credential.topics = key.topics ?? [key.bundleId]
            guard stored.credential.topics!.contains(key.bundleId) else {
                throw IsletError(.invalidRequest, "This topic-specific key's topics do not include \(key.bundleId): it cannot sign for the app's pushes.")
            }
        } else {
            stored.credential.topics = nil
        }
        // One the transport could never send with is refused now, not at every delivery for hours.
        try await transport?.check(stored)
        return try await write { [stored] tx in
            _ = try tx.requireApp(key.bundleId)
            var stored = stored
            stored.credential.failure = nil
            let set = replacingTheSet ? [] : try tx.deliveryCredentials(bundleId: key.bundleId).keys(in: key.environment)
            try KeySet.check(
                adding: key.keyId, scope: key.kind, topics: stored.credential.topics ?? [], relatedKeyId: key.relatedKeyId,
                to: set.filter { $0.credential.teamId == key.teamId }.map { KeySet.Member(keyId: $0.credential.keyId, scope: $0.credential.kind) }
            )
            if replacingTheSet {
                _ = try tx.deleteCredentials(bundleId: key.bundleId, environment: key.environment, keyId: nil)
            } else if key.url == nil, let route = set.last(where: { $0.credential.keyId != key.keyId })?.credential {
                (stored.credential.url, stored.credential.caCertificate) = (route.url, route.caCertificate)
            }
            try tx.putCredential(stored)
            try Self.release(bundleId: key.bundleId, in: tx)
            return stored.credential
        }
    }

    /// Removes one key from an app's set (in one environment, or wherever it is); the newest
    /// remaining key signs. Deliveries of an environment left with no key wait in the outbox.
    public func deleteDeliveryKey(bundleId: BundleID, keyId: String, environment: APNsEnvironment?) async throws {
        try await write { tx in
            _ = try tx.requireApp(bundleId)
            guard try tx.deleteCredentials(bundleId: bundleId, environment: environment, keyId: keyId) > 0 else {
                throw IsletError(.keyNotFound, "\(bundleId) has no delivery key \(keyId)\(environment.map { " for \($0.rawValue)" } ?? "").")
            }
        }
    }

    /// An app's credentials, without their keys.
    public func deliveryCredentials(bundleId: BundleID) async throws -> [DeliveryCredential] {
        try await read { store in
            _ = try store.requireApp(bundleId)
            return try store.deliveryCredentials(bundleId: bundleId).map(\.credential)
        }
    }

    /// Stops delivery for an app (in one environment, or both). Deliveries wait in the outbox.
    /// - Returns: How many credentials were removed.
    public func deleteDeliveryCredentials(bundleId: BundleID, environment: APNsEnvironment?) async throws -> Int {
        try await write { tx in
            _ = try tx.requireApp(bundleId)
            return try tx.deleteCredentials(bundleId: bundleId, environment: environment, keyId: nil)
        }
    }

    // MARK: Tokens

    /// Records a phone's push-to-start token for an app and activity type, replacing the one it
    /// had; a device not yet known is created.
    public func registerPushToStartToken(
        _ token: String, environment: APNsEnvironment, deviceId: DeviceID, bundleId: BundleID, attributesType: String
    ) async throws -> PhoneToken {
        try PhoneToken.validate(token)
        try Device.validate(id: deviceId)
        try ActivityRequest.validate(attributesType: attributesType)
        let token = token.lowercased()
        return try await write { tx in
            _ = try tx.requireApp(bundleId)
            if try tx.device(deviceId) == nil {
                try tx.insertDevice(Device(id: deviceId, name: deviceId, createdAt: tx.now))
                for app in try tx.apps() {
                    try tx.issuePushToStartToken(deviceId: deviceId, bundleId: app.bundleId, announce: false)
                }
            }
            if let current = try tx.pushToStartToken(deviceId: deviceId, bundleId: bundleId, attributesType: attributesType),
                current.token == token, current.environment == environment
            {
                return current
            }
            try Self.claimToken(token, for: bundleId, in: tx)
            try tx.retirePhoneTokens(.pushToStart(deviceId: deviceId, bundleId: bundleId, attributesType: attributesType), reason: "replaced")
            let recorded = PhoneToken(
                token: token, kind: .pushToStart, bundleId: bundleId, deviceId: deviceId, attributesType: attributesType,
                environment: environment, createdAt: tx.now
            )
            try Self.record(recorded, in: tx)
            return recorded
        }
    }

    /// Records the update token of an activity on a phone — one that arrives after a
    /// push-to-start, or after the app started the activity itself — and sends what waited for it.
    ///
    /// - Parameter onDevice: The caller is the phone itself (an installation): an activity on
    ///   another device is not found, as one that does not exist.
    public func registerUpdateToken(
        _ token: String, deviceId: DeviceID, activityId: ActivityID, owner: BundleID?, onDevice: Bool = false
    ) async throws -> PhoneToken {
        try PhoneToken.validate(token)
        return try await write(Self.registeringUpdateToken(token, deviceId: deviceId, activityId: activityId, owner: owner, onDevice: onDevice))
    }

    /// `registerUpdateToken` for an app's key or the admin's, answering `completion` once the
    /// commit is published (a hot route, docs/engine.md §9.1).
    public func submitUpdateToken(
        _ token: String, deviceId: DeviceID, activityId: ActivityID, owner: BundleID?,
        completion: @escaping @Sendable (Result<PhoneToken, any Error>) -> Void
    ) {
        do {
            try PhoneToken.validate(token)
        } catch {
            return completion(.failure(error))
        }
        submit(about: nil, Self.registeringUpdateToken(token, deviceId: deviceId, activityId: activityId, owner: owner, onDevice: false), completion: completion)
    }

    /// The write of `registerUpdateToken`, in its transaction.
    private static func registeringUpdateToken(
        _ token: String, deviceId: DeviceID, activityId: ActivityID, owner: BundleID?, onDevice: Bool
    ) -> @Sendable (any Transaction) throws -> PhoneToken {
        let token = token.lowercased()
        return { tx in
            let activity = try tx.loadActivity(activityId, owner: owner)
            guard activity.deviceId == deviceId else {
                if onDevice { throw IsletError(.activityNotFound, "No activity \(activityId).") }
                throw IsletError(.invalidRequest, "Activity \(activityId) is on device \(activity.deviceId), not \(deviceId).")
            }
            var phone = try tx.phoneActivity(activityId)
            if phone == nil {
                // An activity the app started itself: its environment is the app's other tokens' on this phone.
                let environment = try tx.phoneTokens(deviceId: deviceId).first { $0.bundleId == activity.bundleId }?.environment
                guard let environment else {
                    throw IsletError(
                        .invalidRequest,
                        "Device \(deviceId) has no token of \(activity.bundleId) yet, so its environment is unknown: register its push-to-start token first (PUT /v1/devices/\(deviceId)/push-to-start-tokens/\(activity.attributesType))."
                    )
                }
                phone = PhoneActivity(activityId: activityId, bundleId: activity.bundleId, deviceId: deviceId, environment: environment)
            }
            if let current = try tx.updateToken(activityId: activityId), current.token == token { return current }
            try Self.claimToken(token, for: activity.bundleId, in: tx)
            try tx.retirePhoneTokens(.update(activityId: activityId), reason: "replaced")
            let recorded = PhoneToken(
                token: token, kind: .update, bundleId: activity.bundleId, deviceId: deviceId, activityId: activityId,
                environment: phone!.environment, createdAt: tx.now
            )
            try Self.record(recorded, in: tx)
            phone!.state = .active
            try tx.putPhoneActivity(phone!)
            try Self.release(bundleId: activity.bundleId, in: tx)
            return recorded
        }
    }

    /// Keeps a token a phone's app reported, and tells the event log (a webhook's `token.updated`).
    static func record(_ token: PhoneToken, in tx: any Transaction) throws {
        try tx.putPhoneToken(token)
        let kind: PushTokenChange.Kind =
            switch token.kind {
            case .pushToStart: .phonePushToStart
            case .update: .phoneUpdate
            case .fcm: .fcm
            case .fid: .fid
            }
        try tx.append(
            .pushTokenUpdated(PushTokenChange(pushToken: token.token, kind: kind, attributesType: token.attributesType)),
            bundleId: token.bundleId, deviceId: token.deviceId, activityId: token.activityId
        )
    }

    /// A token is one phone's, for one app and one thing: registering one recorded elsewhere
    /// for the same app moves it (a phone restored from a backup, a device renamed); one
    /// recorded for another app is refused. A token belongs to the app that registered it: an
    /// app key that learned another app's token cannot take it over (and the other app's
    /// deliveries with it).
    static func claimToken(_ token: String, for bundleId: BundleID, in tx: any Transaction) throws {
        guard let earlier = try tx.phoneToken(token), earlier.retiredAt == nil else { return }
        guard earlier.bundleId == bundleId else {
            throw IsletError(.forbidden, "This token is registered for another app; a token belongs to the app that registered it.")
        }
        try tx.retirePhoneToken(token, reason: "reregistered", appleTimestamp: nil)
    }

    /// Makes an app's held deliveries pending again: what they waited for may have come.
    static func release(bundleId: BundleID, in tx: any Transaction) throws {
        for var delivery in try tx.heldDeliveries(bundleId: bundleId) {
            delivery.release(dueAt: tx.now)
            try tx.updateDelivery(delivery)
        }
        tx.effects.deliveriesReady = true
    }

    /// Sends a delivery again, at once: one that failed, or one held or waiting for its next
    /// attempt. Its log says who asked. A delivery being sent, or delivered, is left as it is; so
    /// is one a newer change replaced (a phone would ignore its older content anyway).
    public func retryDelivery(_ id: Int64, owner: BundleID?, by asker: String) async throws -> Delivery {
        try await write { tx in
            guard var delivery = try tx.delivery(id), owner == nil || delivery.bundleId == owner else {
                throw IsletError(.deliveryNotFound, "No delivery \(id).")
            }
            guard delivery.canBeSentAgain else {
                throw IsletError(.invalidRequest, "Delivery \(id) is \(delivery.state.rawValue): only a failed, held or waiting one is sent again.")
            }
            delivery.sendAgain(at: tx.now)
            try tx.updateDelivery(delivery)
            try Self.log(
                DeliveryReport(delivery: delivery.id, event: delivery.event.rawValue, outcome: .queued, attempt: delivery.attempts, note: "sent again: asked by \(asker)"),
                of: delivery, in: tx
            )
            tx.effects.deliveriesReady = true
            return delivery
        }
    }

    /// A device and its tokens.
    public func phone(_ deviceId: DeviceID) async throws -> Phone {
        try await read { store in
            Phone(device: try store.requireDevice(deviceId), tokens: try store.phoneTokens(deviceId: deviceId))
        }
    }

    // MARK: The log

    /// An activity's delivery log, oldest first; another app's activity is not found.
    public func deliveries(of id: ActivityID, owner: BundleID?) async throws -> [(event: EventID, time: Date, report: DeliveryReport)] {
        try await read { store in
            _ = try store.loadActivity(id, owner: owner)
            return try store.history(of: id).filter { $0.type == .delivery }.compactMap { event in
                guard let decoded = try? event.decoded(), let report = try? decoded.data.decode(DeliveryReport.self) else { return nil }
                return (event.id, decoded.time, report)
            }
        }
    }

    /// How the outbox stands.
    public func deliveryHealth() async throws -> DeliveryHealth {
        let now = clock.now()
        return try await read { store in try Self.deliveryHealth(bundleId: nil, now: now, in: store) }
    }

    /// The figures of the console's overview, of one app or of all: the store's in one read,
    /// and what the event stream carried since this node started.
    public func overview(bundleId: BundleID?) async throws -> Overview {
        let now = clock.now()
        let counts = tally.counts(bundleId: bundleId)
        let storeOverview = try await storeOverview()
        return try await read { store in
            Overview(
                bundleId: bundleId, time: now, population: try store.population(bundleId: bundleId),
                activities: try store.activityCounts(bundleId: bundleId),
                delivery: try Self.deliveryHealth(bundleId: bundleId, now: now, in: store).overview, store: storeOverview, counts: counts
            )
        }
    }

    /// How the outbox stands, for one app or all: degraded while a credential cannot be used
    /// (Apple refuses its provider token, or what is stored cannot be read), deliveries wait to be tried again, or the oldest waits over a minute.
    private static func deliveryHealth(bundleId: BundleID?, now: Date, in store: any StoreReading) throws -> DeliveryHealth {
        let backlog = try store.deliveryBacklog(bundleId: bundleId)
        // Every refused credential is reported; one beside a key that still signs holds nothing
        // (`KeySet.signer`), so only the others make delivery degraded.
        var (refused, blocking): ([String], [String]) = ([], [])
        for key in try store.refusedCredentials() where bundleId == nil || key.bundleId == bundleId {
            let line = "\(key.bundleId) (\(key.environment.rawValue)): key \(key.keyId): \(key.failure ?? "")"
            if try store.deliveryCredentials(bundleId: key.bundleId).signer(in: key.environment) != nil {
                refused.append(line + " (another key signs)")
            } else {
                refused.append(line)
                blocking.append(line)
            }
        }
        for credential in try store.refusedFCMCredentials() where bundleId == nil || credential.bundleId == bundleId {
            refused.append("\(credential.bundleId) (FCM): \(credential.failure ?? "")")
            blocking.append(refused[refused.count - 1])
        }
        var degraded: String?
        var withoutNames: String?
        if !blocking.isEmpty {
            degraded = "delivery credentials cannot be used: \(blocking.joined(separator: "; "))"
            withoutNames = "the delivery credentials of \(blocking.count) app\(blocking.count == 1 ? "" : "s") cannot be used; GET /v1/overview (with a key) says which and why"
        } else if backlog.retrying > 0 {
            degraded = "\(backlog.retrying) deliver\(backlog.retrying == 1 ? "y waits" : "ies wait") to be tried again: Apple did not answer, or asked to wait (429, 500, 503)"
        } else if let oldest = backlog.oldest, now.timeIntervalSince(oldest) > 60 {
            degraded = "the oldest undelivered change is \(DurationText.text(now.timeIntervalSince(oldest))) old (\(backlog.depth) waiting)"
        }
        return DeliveryHealth(
            depth: backlog.depth, oldest: backlog.oldest, refusedCredentials: refused, degraded: degraded,
            degradedWithoutNames: withoutNames ?? degraded, retrying: backlog.retrying, held: backlog.held
        )
    }
}

