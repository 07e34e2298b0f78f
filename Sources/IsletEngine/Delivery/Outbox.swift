import Foundation
import Synchronization
import IsletCore

/// An activity delivered to a real phone: which phone, in which environment, and what the
/// phone's side of it has come to.
public struct PhoneActivity: Hashable, Sendable {
    /// Where delivery to the phone stands.
    public enum State: String, Hashable, Sendable {
        /// Changes are sent.
        case active
        /// Apple said the activity's token is gone: nothing more is sent.
        case tokenRetired
    }

    public var activityId: ActivityID
    public var bundleId: BundleID
    public var deviceId: DeviceID
    public var environment: APNsEnvironment
    /// An iPhone (APNs) or an Android phone (FCM).
    public var platform: DevicePlatform
    /// Set when the phone joined a broadcast channel: its changes go by broadcast.
    public var channelId: String?
    public var state: State

    public init(
        activityId: ActivityID, bundleId: BundleID, deviceId: DeviceID, environment: APNsEnvironment, platform: DevicePlatform = .ios,
        channelId: String? = nil, state: State = .active
    ) {
        self.platform = platform
        self.activityId = activityId
        self.bundleId = bundleId
        self.deviceId = deviceId
        self.environment = environment
        self.channelId = channelId
        self.state = state
    }
}

/// A credential as stored: what the API shows, and the private key it never shows.
public struct StoredCredential: Hashable, Sendable {
    public var credential: DeliveryCredential
    /// The `.p8` key's PEM text.
    public var privateKey: String

    public init(credential: DeliveryCredential, privateKey: String) {
        self.credential = credential
        self.privateKey = privateKey
    }
}

extension [StoredCredential] {
    /// The keys of one environment.
    func keys(in environment: APNsEnvironment) -> [StoredCredential] {
        filter { $0.credential.environment == environment }
    }

    /// The key that signs in `environment` (`KeySet.signer`): the newest Apple has not refused.
    func signer(in environment: APNsEnvironment) -> StoredCredential? {
        KeySet.signer(
            keys(in: environment), createdAt: { $0.credential.createdAt.timeIntervalSince1970 }, keyId: { $0.credential.keyId },
            refused: { $0.credential.failure != nil }
        )
    }
}

/// The priority-10 budget as iOS counts it: per app and phone, over the last hour
/// (docs/renewal.md). Both sides keep it in `phoneBudget`: the sender for a real phone, the
/// device Islet plays for itself.
enum PhoneBudget {
    /// The budget's hour.
    static let window: TimeInterval = 3600

    /// Whose budget: an app's on a phone.
    struct Key: Hashable, Sendable {
        var deviceId: DeviceID
        var bundleId: BundleID
    }

    /// The priority-10 requests a node's sender has out, per phone and app, not yet answered.
    final class InFlight: Sendable {
        private let state = Mutex<[Key: Int]>([:])

        var counts: [Key: Int] { state.withLock { $0 } }

        func add(_ keys: [Key]) {
            guard !keys.isEmpty else { return }
            state.withLock { counts in for key in keys { counts[key, default: 0] += 1 } }
        }

        func remove(_ keys: [Key]) {
            guard !keys.isEmpty else { return }
            state.withLock { counts in
                for key in keys {
                    let left = (counts[key] ?? 0) - 1
                    counts[key] = left > 0 ? left : nil
                }
            }
        }
    }

    /// The app's priority-10 pushes to the phone in the last hour, and the hourly budget (raised
    /// by the phone's frequent-updates setting for the app).
    static func standing(
        deviceId: DeviceID, bundleId: BundleID, rules: LifecycleRules, now: Date, in store: any StoreReading
    ) throws -> (sends: [Date], budget: Int) {
        let frequent = try store.settings(deviceId: deviceId, bundleId: bundleId).frequentUpdates
        let sends = try recent(deviceId: deviceId, bundleId: bundleId, now: now, in: store)
        return (sends, frequent ? rules.frequentPushBudgetPerHour : rules.pushBudgetPerHour)
    }

    /// The sends of the last hour, oldest first.
    static func recent(deviceId: DeviceID, bundleId: BundleID, now: Date, in store: any StoreReading) throws -> [Date] {
        try store.phoneBudget(deviceId: deviceId, bundleId: bundleId).filter { now.timeIntervalSince($0) < window }
    }

    /// The sends of the last hour, read under the budget's lock: for a transaction that writes it.
    static func recentLocked(deviceId: DeviceID, bundleId: BundleID, in tx: any Transaction) throws -> [Date] {
        try tx.lockedPhoneBudget(deviceId: deviceId, bundleId: bundleId).filter { tx.now.timeIntervalSince($0) < window }
    }

    /// Counts one priority-10 push to the phone now, of `perHour`: a round of one (`Spends`).
    static func spend(deviceId: DeviceID, bundleId: BundleID, perHour: Int, activityId: ActivityID?, in tx: any Transaction) throws {
        var spends = Spends()
        spends.add(Key(deviceId: deviceId, bundleId: bundleId), perHour: perHour, activityId: activityId)
        try spends.write(in: tx)
    }

    /// The priority-10 pushes a round's answers spent, per phone and app, written once per
    /// phone when the round's answers are (`write`): many activities on one phone read and
    /// write its row once a round, not once an answer.
    struct Spends {
        private var keys: [Key] = []
        private var spent: [Key: (perHour: Int, activities: [ActivityID?])] = [:]

        /// One push Apple took for `activityId`, of `perHour`.
        mutating func add(_ key: Key, perHour: Int, activityId: ActivityID?) {
            if spent[key] == nil { keys.append(key) }
            spent[key, default: (perHour, [])].activities.append(activityId)
            spent[key]!.perHour = perHour
        }

        /// Writes each phone's row once, in the order the phones were first spent on; the push
        /// that spent the last of the budget tells the event log, as it would spent alone.
        func write(in tx: any Transaction) throws {
            for key in keys {
                let (perHour, activities) = spent[key]!
                let before = try recentLocked(deviceId: key.deviceId, bundleId: key.bundleId, in: tx)
                let sends = before + Array(repeating: tx.now, count: activities.count)
                try tx.putPhoneBudget(deviceId: key.deviceId, bundleId: key.bundleId, sends: sends)
                // The push that made the count `perHour`, if this round's did.
                let crossing = perHour - 1 - before.count
                guard activities.indices.contains(crossing) else { continue }
                try announceExhaustion(
                    Array(sends.prefix(perHour)), perHour: perHour, deviceId: key.deviceId, bundleId: key.bundleId,
                    activityId: activities[crossing], in: tx
                )
            }
        }
    }

    /// Keeps the sends of the last hour, oldest first; the push that spends the last of
    /// `perHour` tells the event log (`budgetExhausted`, a webhook's `budget.exhausted`), once
    /// until the budget comes back.
    static func put(
        _ sends: [Date], spentBefore: Int, perHour: Int, deviceId: DeviceID, bundleId: BundleID, activityId: ActivityID?, in tx: any Transaction
    ) throws {
        try tx.putPhoneBudget(deviceId: deviceId, bundleId: bundleId, sends: sends)
        guard spentBefore < perHour, sends.count >= perHour else { return }
        try announceExhaustion(sends, perHour: perHour, deviceId: deviceId, bundleId: bundleId, activityId: activityId, in: tx)
    }

    /// Tells the event log that `sends`, the pushes of the last hour up to the one that spent the
    /// last of `perHour`, ran the budget out.
    private static func announceExhaustion(
        _ sends: [Date], perHour: Int, deviceId: DeviceID, bundleId: BundleID, activityId: ActivityID?, in tx: any Transaction
    ) throws {
        guard let oldest = sends.min() else { return }
        try tx.append(
            .budgetExhausted(BudgetExhaustion(perHour: perHour, spent: sends.count, nextRefillAt: oldest.addingTimeInterval(window))),
            bundleId: bundleId, deviceId: deviceId, activityId: activityId
        )
    }
}
