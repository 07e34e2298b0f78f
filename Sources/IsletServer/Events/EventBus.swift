import Foundation
import IsletCore
import Logging
import ServiceLifecycle
import Synchronization

/// Hands committed events to every subscriber whose filter they pass, without ever waiting on
/// one: each subscriber has its own bounded, coalescing queue (`Subscription`).
///
/// As a `Service` it marks idle subscribers every keep-alive interval, and ends every
/// subscription when the server shuts down, so streams close cleanly.
public final class EventBus: Service, Sendable {
    private struct State {
        var subscriptions: [UInt64: Subscription] = [:]
        var nextID: UInt64 = 0
        var isShutDown = false
    }

    private let state = Mutex(State())
    private let settings: StreamSettings
    private let metrics: ServerMetrics
    private let clock: any WallClock

    init(settings: StreamSettings, metrics: ServerMetrics, clock: any WallClock) {
        self.settings = settings
        self.metrics = metrics
        self.clock = clock
    }

    /// Offers committed events to every matching subscriber. Never waits.
    public func publish(_ events: [EncodedEvent]) {
        let subscriptions = state.withLock { Array($0.subscriptions.values) }
        for event in events {
            metrics.recordPublished(event.type)
            for subscription in subscriptions where subscription.filter.matches(event) {
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
                state.subscriptions[subscription.id] = subscription
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
        let removed = state.withLock { $0.subscriptions.removeValue(forKey: subscription.id) }
        if removed != nil {
            metrics.subscriberCountChanged(by: -1)
        }
        subscription.finish(.cancelled)
    }

    /// The number of registered subscribers.
    public var subscriberCount: Int { state.withLock { $0.subscriptions.count } }

    public func run() async throws {
        // Keep-alives on a fixed beat from the start, so a late wake-up does not shift it.
        await periodically(every: settings.keepAliveInterval, clock: clock) { [self] in
            for subscription in self.state.withLock({ Array($0.subscriptions.values) }) {
                subscription.markIdle()
            }
        }
        let subscriptions = state.withLock { state -> [Subscription] in
            state.isShutDown = true
            defer { state.subscriptions.removeAll() }
            return Array(state.subscriptions.values)
        }
        metrics.subscriberCountChanged(by: -subscriptions.count)
        for subscription in subscriptions {
            subscription.finish(.shutdown)
        }
    }
}
