import Foundation
import IsletCore

/// A push to a device token, as the APNs endpoint hands it over once Apple's wire rules (headers,
/// provider token, token shape) have passed.
public struct DevicePush: Sendable {
    /// The device token, as sent (any case).
    public var token: String
    /// The app the topic names.
    public var bundleId: BundleID
    /// `apns-priority`: 10 spends the activity's budget.
    public var priority: Int
    /// The payload as parsed, or why APNs refuses it. A refusal is answered only for a token
    /// that exists and belongs to the topic's app, as Apple checks the token first.
    public var payload: Result<LiveActivityPayload, any Error>
    /// `apns-collapse-id`: on a push-to-start, a start sent again under it while the card it
    /// started is live is that card (docs/delivery.md, "A start sent twice").
    public var collapseId: String?

    /// Creates a push.
    public init(token: String, bundleId: BundleID, priority: Int, payload: Result<LiveActivityPayload, any Error>, collapseId: String? = nil) {
        self.token = token
        self.bundleId = bundleId
        self.priority = priority
        self.payload = payload
        self.collapseId = collapseId
    }
}

/// A broadcast to a channel, once Apple's wire rules have passed.
public struct BroadcastPush: Sendable {
    /// The channel, from `apns-channel-id`.
    public var channelId: String
    /// The app in the path.
    public var bundleId: BundleID
    /// `apns-expiration`: whether, and until when, a channel that keeps messages keeps this one.
    public var expiration: Int64
    /// The update or end it carries, or why APNs refuses it (answered once the channel is found).
    public var change: Result<Activity.PushedChange, any Error>

    /// Creates a broadcast.
    public init(channelId: String, bundleId: BundleID, expiration: Int64, change: Result<Activity.PushedChange, any Error>) {
        self.channelId = channelId
        self.bundleId = bundleId
        self.expiration = expiration
        self.change = change
    }
}

/// What a push APNs accepted did on the device.
public struct PushResult: Sendable, Hashable {
    /// Why the device dropped it, if it did, with the reason in words.
    public var ignored: IgnoredPush?
    /// Whether the app asked for strict pushes: a drop is then answered as a refusal.
    public var strict: Bool
    /// The activity it reached: the token's, or the one a push-to-start started; `nil` when
    /// the device refused a push-to-start (its own history says why).
    public var activityId: ActivityID?
    /// The device it reached.
    public var deviceId: DeviceID

    /// A push a device dropped.
    public struct IgnoredPush: Sendable, Hashable {
        public var reason: IgnoreReason
        public var detail: String
    }
}

/// Why APNs refuses a push before any device sees it: Apple's answers, as the engine finds them.
public enum PushRefusal: Error, Hashable, Sendable {
    /// No app has the topic's bundle id.
    case unknownTopic(BundleID)
    /// No activity and no device holds the token.
    case unknownToken
    /// The token was valid until `since`: replaced by a newer one (`rotated`), or unregistered.
    case retired(since: Date, rotated: Bool)
    /// The token belongs to another app than the topic's. Which app is not said: whoever holds
    /// a token learns that it is another app's, as Apple answers, never whose.
    case tokenNotForTopic(topic: BundleID)
    /// No such channel for the app.
    case channelNotRegistered(channelId: String, bundleId: BundleID)
    /// A channel that stores no message takes `apns-expiration: 0` only.
    case expirationOnChannelWithoutStorage
}

extension Engine {
    // MARK: Pushes

    /// Takes a push to a device token as the device would: finds what the token belongs to,
    /// then applies the payload — or drops it and records why — all in one transaction.
    ///
    /// - Throws: `PushRefusal` when APNs itself refuses it (an unknown, retired or other app's
    ///   token), or the payload's own refusal.
    public func deliver(_ push: DevicePush) async throws -> PushResult {
        try await write(Self.delivering(push, rules: rules))
    }

    /// `deliver`, answering `completion` once the push is committed and published: for the APNs
    /// endpoint's hot route (docs/engine.md §9.1).
    public func submitDelivery(_ push: DevicePush, completion: @escaping @Sendable (Result<PushResult, any Error>) -> Void) {
        submit(about: nil, Self.delivering(push, rules: rules), completion: completion)
    }

    /// The write of `deliver`, in its transaction.
    private static func delivering(_ push: DevicePush, rules: LifecycleRules) -> @Sendable (any Transaction) throws -> PushResult {
        { tx in
            guard let app = try tx.app(push.bundleId) else { throw PushRefusal.unknownTopic(push.bundleId) }
            switch try tx.token(push.token.lowercased()) {
            case .unknown, .fcm, .fid:
                // An Android phone's registration token or installation ID is FCM's, not APNs's.
                throw PushRefusal.unknownToken
            case .retired(let at, let reason, let owner):
                try Self.check(owner, is: push.bundleId)
                throw PushRefusal.retired(since: at, rotated: reason == TokenRetirement.rotated(at: at).reason)
            case .activity(let activityId, let owner):
                try Self.check(owner, is: push.bundleId)
                let payload = try push.payload.get()
                var activity = try tx.loadActivity(activityId, owner: nil)
                let ignored = try Self.push(payload, priority: push.priority, to: &activity, rules: rules, in: tx)
                return PushResult(ignored: ignored, strict: app.strictPushes, activityId: activityId, deviceId: activity.deviceId)
            case .pushToStart(let deviceId, let owner):
                try Self.check(owner, is: push.bundleId)
                let payload = try push.payload.get()
                let (started, ignored) = try Self.pushToStart(
                    payload, deviceId: deviceId, bundleId: push.bundleId, collapseId: push.collapseId, rules: rules, in: tx
                )
                return PushResult(ignored: ignored, strict: app.strictPushes, activityId: started, deviceId: deviceId)
            }
        }
    }

    private static func check(_ owner: BundleID, is bundleId: BundleID) throws {
        guard owner == bundleId else { throw PushRefusal.tokenNotForTopic(topic: bundleId) }
    }

    /// A push to an activity's token: an update or end applied (or dropped by the rules), or a
    /// payload the activity cannot use recorded on it.
    static func push(
        _ payload: LiveActivityPayload, priority: Int, to activity: inout Activity, rules: LifecycleRules, in tx: any Transaction
    ) throws -> PushResult.IgnoredPush? {
        let change: Activity.PushedChange
        switch payload.action {
        case .update(let update): change = .update(update)
        case .end(let end): change = .end(end)
        case .start:
            return try undeliverable(
                .invalidPayload, "A start goes to a push-to-start token, not to an activity's token.", payload: payload,
                on: activity, in: tx
            )
        case .undeliverable(let reason, let detail):
            return try undeliverable(reason, detail, payload: payload, on: activity, in: tx)
        }
        let settings = try tx.settings(deviceId: activity.deviceId, bundleId: activity.bundleId)
        let delivery = Activity.PushDelivery(
            budgetPerHour: rules.pushBudget(priority: priority, frequentUpdates: settings.frequentUpdates)
        )
        // The budget is the app's on the phone, as iOS counts it: the activity spends from it.
        let before = delivery.budgetPerHour == nil
            ? nil : try PhoneBudget.recentLocked(deviceId: activity.deviceId, bundleId: activity.bundleId, in: tx)
        if let before { activity.budgetedPushes = before.isEmpty ? nil : before }
        let (transition, _) = try tx.change(&activity, .push(change, delivery), rules: rules)
        if let before, let after = activity.budgetedPushes, after != before, let perHour = delivery.budgetPerHour {
            try PhoneBudget.put(
                after, spentBefore: before.count, perHour: perHour, deviceId: activity.deviceId, bundleId: activity.bundleId,
                activityId: activity.id, in: tx
            )
        }
        tx.effects.countPush(ignored: transition.ignored)
        return transition.ignored.map { PushResult.IgnoredPush(reason: $0, detail: transition.ignoredMessage) }
    }

    /// A push to a device's push-to-start token: a start the device makes (or refuses, and
    /// records on the device), or any other payload recorded on the device as unusable.
    ///
    /// A start under an `apns-collapse-id` keeps it as its activity's key (`collapsedKey`): the
    /// same start sent again (its answer was lost, and the provider sent it once more) while
    /// that card is live collapses into it, as apps use the header against duplicate starts.
    ///
    /// - Returns: The activity started, or why the device dropped the push.
    static func pushToStart(
        _ payload: LiveActivityPayload, deviceId: DeviceID, bundleId: BundleID, collapseId: String? = nil, rules: LifecycleRules,
        in tx: any Transaction
    ) throws -> (started: ActivityID?, ignored: PushResult.IgnoredPush?) {
        let ignored: PushResult.IgnoredPush
        let content: ActivityContent?
        switch payload.action {
        case .start(var start):
            start.request.deviceId = deviceId
            start.request.source = .pushToStart
            let key = collapseId.map(collapsedKey)
            if let key, let shown = try tx.liveActivity(key: key, bundleId: bundleId, deviceId: deviceId) {
                ignored = PushResult.IgnoredPush(
                    reason: .invalidPayload,
                    detail: "A start under apns-collapse-id \(collapseId ?? "") is already shown (\(shown.id)): sent again, it changes nothing."
                )
                content = start.request.content
                break
            }
            do {
                let outcome = try Self.start(start.request, bundleId: bundleId, key: key, rules: rules, in: tx)
                tx.effects.countPush(ignored: nil)
                return (outcome.activity.id, nil)
            } catch let refusal as IsletError {
                guard let reason = IgnoreReason(refusal: refusal) else { throw refusal }
                ignored = PushResult.IgnoredPush(reason: reason, detail: refusal.message)
                content = start.request.content
            }
        case .update, .end:
            ignored = PushResult.IgnoredPush(
                reason: .invalidPayload, detail: "Updates and ends go to the activity's own token, not to a push-to-start token."
            )
            content = nil
        case .undeliverable(let reason, let detail):
            ignored = PushResult.IgnoredPush(reason: reason, detail: detail)
            content = nil
        }
        // No activity to record it on: the device's history has it.
        let record = IgnoredUpdate(
            reason: ignored.reason, action: payload.actionName, content: content, timestamp: payload.timestamp ?? tx.now,
            lastUpdateTimestamp: nil, message: ignored.detail
        )
        try tx.append(.updateIgnored(record), bundleId: bundleId, deviceId: deviceId, activityId: nil)
        tx.effects.countPush(ignored: ignored.reason)
        return (nil, ignored)
    }

    /// The key a card started under an `apns-collapse-id` keeps: a later start under it finds it.
    static func collapsedKey(_ collapseId: String) -> String {
        "apns-collapse-id:\(collapseId)"
    }

    /// Records a push the activity's device could not use.
    private static func undeliverable(
        _ reason: IgnoreReason, _ detail: String, payload: LiveActivityPayload, on activity: Activity, in tx: any Transaction
    ) throws -> PushResult.IgnoredPush {
        let record = IgnoredUpdate(
            reason: reason, action: payload.actionName, content: nil, timestamp: payload.timestamp ?? tx.now,
            lastUpdateTimestamp: activity.lastUpdateTimestamp, message: detail
        )
        try tx.append(.updateIgnored(record), bundleId: activity.bundleId, deviceId: activity.deviceId, activityId: activity.id)
        tx.effects.countPush(ignored: reason)
        return PushResult.IgnoredPush(reason: reason, detail: detail)
    }

    /// Delivers a broadcast to every live activity started with the channel, and keeps it for
    /// later joiners when the channel's policy and the push's expiration say so.
    ///
    /// - Returns: What the push did to each activity.
    @discardableResult
    public func broadcast(_ push: BroadcastPush) async throws -> [Outcome] {
        let rules = self.rules
        return try await write { tx in
            guard let channel = try tx.channel(push.channelId, bundleId: push.bundleId) else {
                throw PushRefusal.channelNotRegistered(channelId: push.channelId, bundleId: push.bundleId)
            }
            if channel.storagePolicy == 0, push.expiration != 0 {
                throw PushRefusal.expirationOnChannelWithoutStorage
            }
            let change = try push.change.get()
            if let until = channel.storesMessage(expiration: push.expiration, now: tx.now) {
                try tx.storeMessage(change, channelId: channel.id, expires: until)
            }
            return try Self.reach(channel, with: change, rules: rules, in: tx)
        }
    }

    /// Applies a broadcast's change to every live activity started with the channel, as a push
    /// that spends no budget.
    static func reach(
        _ channel: BroadcastChannel, with change: Activity.PushedChange, rules: LifecycleRules, in tx: any Transaction
    ) throws -> [Outcome] {
        try tx.liveActivities(channelId: channel.id, bundleId: channel.bundleId).map { found in
            // One renewed while it was looked for reaches its successor (docs/renewal.md).
            var activity = try tx.liveEnd(of: found)
            let (transition, body) = try tx.change(&activity, .push(change, Activity.PushDelivery(budgetPerHour: nil)), rules: rules)
            tx.effects.countPush(ignored: transition.ignored)
            return Outcome(activity: activity, transition: transition, created: false, body: body)
        }
    }

    // MARK: Channels

    /// Creates a broadcast channel; an app holds at most `limit`.
    public func createChannel(bundleId: BundleID, storagePolicy: Int, limit: Int) async throws -> BroadcastChannel {
        try await write { tx in
            _ = try tx.requireApp(bundleId)
            let count = try tx.channels(bundleId: bundleId).count
            guard count < limit else {
                throw IsletError(.invalidRequest, "\(bundleId) already has \(count) channels; the limit is \(limit).")
            }
            // Random base64, as APNs issues them; drawn without "/" and "+" so an id also reads
            // well in a URL path.
            var generator = SystemRandomNumberGenerator()
            var id: String
            repeat {
                id = Data((0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }).base64EncodedString()
            } while id.contains("/") || id.contains("+")
            let channel = BroadcastChannel(id: id, bundleId: bundleId, storagePolicy: storagePolicy, createdAt: tx.now)
            try tx.insertChannel(channel)
            return channel
        }
    }

    /// One of an app's channels.
    public func channel(_ id: String, bundleId: BundleID) async throws -> BroadcastChannel? {
        try await read { store in try store.channel(id, bundleId: bundleId) }
    }

    /// An app's channels, oldest first.
    public func channels(bundleId: BundleID) async throws -> [BroadcastChannel] {
        try await read { store in try store.channels(bundleId: bundleId) }
    }

    /// Deletes a channel, for good: activities started with it receive nothing more.
    /// - Returns: Whether it existed.
    public func deleteChannel(_ id: String, bundleId: BundleID) async throws -> Bool {
        try await write { tx in try tx.deleteChannel(id, bundleId: bundleId) }
    }

    // MARK: Provider keys, activity types, strict pushes

    /// Registers a provider key for an app (or replaces the one with its id), within Apple's
    /// limits for its kind in each environment it serves (`KeySet.check`): a rotation's third
    /// team-scoped key is refused until one is revoked, as Apple refuses it.
    public func addProviderKey(_ key: ProviderKey) async throws {
        try await write { tx in
            _ = try tx.requireApp(key.bundleId)
            let held = try tx.providerKeys(bundleId: key.bundleId, keyId: nil).filter { $0.teamId == key.teamId }
            for environment in key.environment.map({ [$0] }) ?? APNsEnvironment.allCases {
                let members = held.filter { $0.environment == nil || $0.environment == environment }
                try KeySet.check(
                    adding: key.keyId, scope: key.kind, topics: [key.bundleId], relatedKeyId: nil,
                    to: members.map { KeySet.Member(keyId: $0.keyId, scope: $0.kind) }
                )
            }
            try tx.putProviderKey(key)
            tx.effects.providerKeysChanged = true
        }
    }

    /// Removes a provider key from an app: tokens it signs are refused from now on.
    public func deleteProviderKey(keyId: String, bundleId: BundleID) async throws {
        try await write { tx in
            guard try tx.deleteProviderKey(keyId: keyId, bundleId: bundleId) else {
                throw IsletError(.keyNotFound, "No key \(keyId) for \(bundleId).")
            }
            tx.effects.providerKeysChanged = true
        }
    }

    /// Provider keys, of one app or with one key id.
    public func providerKeys(bundleId: BundleID? = nil, keyId: String? = nil) async throws -> [ProviderKey] {
        try await read { store in try store.providerKeys(bundleId: bundleId, keyId: keyId) }
    }

    /// Registers (or replaces) an activity type's shapes.
    public func putActivityType(_ type: ActivityType) async throws {
        try await write { tx in
            _ = try tx.requireApp(type.bundleId)
            try tx.putActivityType(type)
        }
    }

    /// An app's registered activity types.
    public func activityTypes(bundleId: BundleID) async throws -> [ActivityType] {
        try await read { store in try store.activityTypes(bundleId: bundleId) }
    }

    /// Turns strict pushes on or off for an app.
    public func setStrictPushes(_ strict: Bool, bundleId: BundleID) async throws -> App {
        try await updateApp(bundleId, strictPushes: strict)
    }

    /// Changes an app's switches, those given: strict pushes, and delivery paused (resuming it
    /// makes what was held for it pending again).
    public func updateApp(_ bundleId: BundleID, strictPushes: Bool? = nil, deliveryPaused: Bool? = nil) async throws -> App {
        try await write { tx in
            var app = try tx.requireApp(bundleId)
            app.strictPushes = strictPushes ?? app.strictPushes
            let resumed = app.deliveryPaused && deliveryPaused == false
            app.deliveryPaused = deliveryPaused ?? app.deliveryPaused
            try tx.updateApp(app)
            if resumed { try Self.release(bundleId: bundleId, in: tx) }
            return app
        }
    }
}

extension Transition {
    /// The message of the last input the rules ignored, if any.
    public var ignoredMessage: String {
        for case .updateIgnored(let ignored) in payloads.reversed() {
            return ignored.message
        }
        return ""
    }
}
