import Foundation
import IsletCore
import Logging
import ServiceLifecycle
import Synchronization

/// Hands committed events to every subscriber whose filter they pass, without ever waiting on
/// one: each subscriber has its own bounded, coalescing queue (`Subscription`).
///
/// Subscriptions are indexed by the most selective field of their filter (`SubscriptionIndex`),
/// so an event is tested only against those that could want it: a display following its device
/// costs nothing when another device's activity changes.
///
/// As a `Service` it marks idle subscribers every keep-alive interval, and ends every
/// subscription when the server shuts down, so streams close cleanly.
public final class EventBus: Service, Sendable {
    private struct State {
        var index = SubscriptionIndex()
        var nextID: UInt64 = 0
        var isShutDown = false
    }

    private let state = Mutex(State())
    private let settings: StreamSettings
    private let metrics: any EngineMetrics
    private let clock: any WallClock

    /// Creates a bus.
    public init(settings: StreamSettings, metrics: any EngineMetrics, clock: any WallClock) {
        self.settings = settings
        self.metrics = metrics
        self.clock = clock
    }

    /// Offers committed events, in order, to every matching subscriber. Never waits.
    public func publish(_ events: [EncodedEvent]) {
        guard !events.isEmpty else { return }
        let deliveries = state.withLock { state in events.map { ($0, state.index.candidates(for: $0)) } }
        for (event, candidates) in deliveries {
            for subscription in candidates where subscription.filter.matches(event) {
                if !subscription.offer(event) {
                    metrics.subscriberOverflowed()
                    remove(subscription)
                }
            }
        }
    }

    /// Registers a subscriber. Events committed from now on reach it; the caller replays older
    /// ones from the store.
    ///
    /// - Parameters:
    ///   - filter: Which events it wants.
    ///   - coalesces: Whether a newer content update may replace an older queued one.
    public func subscribe(filter: EventFilter, coalesces: Bool = true) -> Subscription {
        let metrics = self.metrics
        let (subscription, isShutDown) = state.withLock { state -> (Subscription, Bool) in
            state.nextID += 1
            let subscription = Subscription(
                id: state.nextID, filter: filter, coalesces: coalesces, capacity: settings.bufferSize,
                onCoalesce: { metrics.eventCoalesced() }
            )
            if !state.isShutDown {
                state.index.insert(subscription)
            }
            return (subscription, state.isShutDown)
        }
        if isShutDown {
            subscription.finish(.shutdown)
        } else {
            metrics.subscriberCountChanged(by: 1)
        }
        return subscription
    }

    /// Unregisters a subscriber; its reader gets what is queued, then the end.
    public func remove(_ subscription: Subscription) {
        let removed = state.withLock { $0.index.remove(subscription) }
        if removed {
            metrics.subscriberCountChanged(by: -1)
        }
        subscription.finish(.cancelled)
    }

    /// The number of registered subscribers.
    public var subscriberCount: Int { state.withLock { $0.index.count } }

    public func run() async throws {
        // Keep-alives on a fixed beat from the start, so a late wake-up does not shift it.
        await periodically(every: settings.keepAliveInterval, clock: clock) { [self] in
            for subscription in self.state.withLock({ $0.index.all }) {
                subscription.markIdle()
            }
        }
        let subscriptions = state.withLock { state -> [Subscription] in
            state.isShutDown = true
            defer { state.index = SubscriptionIndex() }
            return state.index.all
        }
        metrics.subscriberCountChanged(by: -subscriptions.count)
        for subscription in subscriptions {
            subscription.finish(.shutdown)
        }
    }
}

/// Subscriptions filed under the most selective field of their filter: an activity, else a
/// device, else an app, else none (the admin's stream of everything). The subscriptions that
/// could want an event are those filed under its activity, device or app, and those filed
/// under none; each is then checked against its whole filter.
struct SubscriptionIndex {
    private var byActivity: [ActivityID: [UInt64: Subscription]] = [:]
    private var byDevice: [DeviceID: [UInt64: Subscription]] = [:]
    private var byApp: [BundleID: [UInt64: Subscription]] = [:]
    private var unfiltered: [UInt64: Subscription] = [:]
    private(set) var count = 0

    private enum Place: Hashable {
        case activity(ActivityID), device(DeviceID), app(BundleID), unfiltered
    }

    private static func place(of filter: EventFilter) -> Place {
        if let activityId = filter.activityId { return .activity(activityId) }
        if let deviceId = filter.deviceId { return .device(deviceId) }
        if let bundleId = filter.bundleId { return .app(bundleId) }
        return .unfiltered
    }

    mutating func insert(_ subscription: Subscription) {
        switch Self.place(of: subscription.filter) {
        case .activity(let id): byActivity[id, default: [:]][subscription.id] = subscription
        case .device(let id): byDevice[id, default: [:]][subscription.id] = subscription
        case .app(let id): byApp[id, default: [:]][subscription.id] = subscription
        case .unfiltered: unfiltered[subscription.id] = subscription
        }
        count += 1
    }

    /// Removes a subscription; returns whether it was there.
    mutating func remove(_ subscription: Subscription) -> Bool {
        let removed: Subscription?
        switch Self.place(of: subscription.filter) {
        case .activity(let id): removed = Self.remove(subscription.id, under: id, from: &byActivity)
        case .device(let id): removed = Self.remove(subscription.id, under: id, from: &byDevice)
        case .app(let id): removed = Self.remove(subscription.id, under: id, from: &byApp)
        case .unfiltered: removed = unfiltered.removeValue(forKey: subscription.id)
        }
        if removed != nil { count -= 1 }
        return removed != nil
    }

    private static func remove<Key: Hashable>(
        _ id: UInt64, under key: Key, from buckets: inout [Key: [UInt64: Subscription]]
    ) -> Subscription? {
        let removed = buckets[key]?.removeValue(forKey: id)
        if buckets[key]?.isEmpty == true { buckets[key] = nil }
        return removed
    }

    /// The subscriptions that could want `event`: each at most once, their filters not yet checked.
    func candidates(for event: EncodedEvent) -> [Subscription] {
        var candidates = Array(unfiltered.values)
        if let activityId = event.activityId, let bucket = byActivity[activityId] { candidates += bucket.values }
        if let bucket = byDevice[event.deviceId] { candidates += bucket.values }
        if let bucket = byApp[event.bundleId] { candidates += bucket.values }
        return candidates
    }

    /// Every subscription.
    var all: [Subscription] {
        Array(unfiltered.values) + byActivity.values.flatMap(\.values) + byDevice.values.flatMap(\.values)
            + byApp.values.flatMap(\.values)
    }
}

/// How event streams behave: queue sizes, keep-alives, replay.
public struct StreamSettings: Equatable, Sendable {
    /// The most events one subscriber may have queued (after coalescing) before it is
    /// disconnected to resume from its last event id.
    public var bufferSize = 10_000
    /// How often an idle stream sends a keep-alive, in seconds.
    public var keepAliveInterval: TimeInterval = 15
    /// How long one write to a stream may take before its reader is taken for gone and the
    /// connection is closed, in seconds.
    public var writeTimeout: TimeInterval = 30
    /// How many stored events a resuming stream reads per query.
    public var replayPageSize = 500

    /// The defaults.
    public init() {}
}
