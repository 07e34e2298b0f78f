import Foundation
import IsletCore
import IsletStore
import Logging

/// Runs every change through the store at the clock's time and keeps the rest of the server
/// informed: metrics count what happened, and the deadline scheduler learns of nearer deadlines.
///
/// Committed events reach the event bus from the store itself, in commit order.
public final class Engine: Sendable {
    /// The store, which applies the core's rules in its transactions.
    public let store: SQLiteStore
    /// The bus that streams committed events.
    public let bus: EventBus
    /// The time source.
    public let clock: any WallClock
    let metrics: ServerMetrics
    let deadlines = WakeSignal()

    init(store: SQLiteStore, bus: EventBus, clock: any WallClock, metrics: ServerMetrics) {
        self.store = store
        self.bus = bus
        self.clock = clock
        self.metrics = metrics
    }

    /// Starts an activity for an app.
    public func request(_ request: ActivityRequest, bundleId: BundleID) async throws -> SQLiteStore.Outcome {
        record(try await store.request(request, bundleId: bundleId, now: clock.now()))
    }

    /// Applies a push to an activity as its device would.
    public func push(_ change: Activity.PushedChange, priority: Int, to id: ActivityID) async throws -> SQLiteStore.Outcome {
        let outcome = record(try await store.push(change, priority: priority, to: id, now: clock.now()))
        metrics.pushReceived(ignored: outcome.transition.ignored)
        return outcome
    }

    /// Starts an activity by push-to-start as the device would, or records why it did not.
    public func pushToStart(_ start: PushStart, bundleId: BundleID) async throws -> SQLiteStore.PushStartOutcome {
        let outcome = try await store.pushToStart(start, bundleId: bundleId, now: clock.now())
        switch outcome {
        case .started(let started):
            _ = record(started)
            metrics.pushReceived(ignored: nil)
        case .ignored(let reason, _):
            metrics.pushReceived(ignored: reason)
        }
        return outcome
    }

    /// Delivers a broadcast to the channel's activities.
    public func broadcast(
        _ change: Activity.PushedChange, channel: BroadcastChannel, expiration: Int64
    ) async throws -> [SQLiteStore.Outcome] {
        let now = clock.now()
        let outcomes = try await store.broadcast(
            change, channel: channel, storeUntil: channel.storesMessage(expiration: expiration, now: now), now: now
        )
        for outcome in outcomes {
            _ = record(outcome)
            metrics.pushReceived(ignored: outcome.transition.ignored)
        }
        return outcomes
    }

    /// Records a push a device could not use.
    public func recordUndeliverable(
        _ ignored: IgnoredUpdate, bundleId: BundleID, deviceId: DeviceID, activityId: ActivityID?
    ) async throws {
        try await store.recordIgnoredPush(ignored, bundleId: bundleId, deviceId: deviceId, activityId: activityId, now: clock.now())
        metrics.pushReceived(ignored: ignored.reason)
    }

    /// Applies an update, end, dismissal or deadline to an activity.
    public func apply(_ input: Activity.Input, to id: ActivityID, owner: BundleID?) async throws -> SQLiteStore.Outcome {
        record(try await store.apply(input, to: id, owner: owner, now: clock.now()))
    }

    /// Starts an activity under a stable key, or updates (and optionally ends) the live one.
    public func startOrUpdate(
        key: String, request: ActivityRequest, timestamp: Date?, end: DismissalPolicy?, bundleId: BundleID
    ) async throws -> SQLiteStore.Outcome {
        record(try await store.startOrUpdate(
            key: key, request: request, timestamp: timestamp, end: end, bundleId: bundleId, now: clock.now()
        ))
    }

    /// Changes a device's settings for an app (turning Live Activities off ends its activities).
    public func updateSettings(
        deviceId: DeviceID, bundleId: BundleID, activitiesEnabled: Bool?, frequentUpdates: Bool?
    ) async throws -> AppSettings {
        try await store.updateSettings(
            deviceId: deviceId, bundleId: bundleId, activitiesEnabled: activitiesEnabled,
            frequentUpdates: frequentUpdates, now: clock.now()
        )
    }

    /// Lets every due deadline take effect, however many there are.
    /// - Returns: How many activities changed.
    @discardableResult
    public func fireDueDeadlines() async throws -> Int {
        let batch = 256
        var total = 0
        while true {
            let fired = try await store.fireDueDeadlines(now: clock.now(), limit: batch)
            total += fired
            if fired < batch { break }
        }
        metrics.deadlinesFired(total)
        return total
    }

    private func record(_ outcome: SQLiteStore.Outcome) -> SQLiteStore.Outcome {
        metrics.record(outcome.transition)
        if let deadline = outcome.activity.nextDeadline {
            deadlines.notify(deadline: deadline)
        }
        return outcome
    }
}
