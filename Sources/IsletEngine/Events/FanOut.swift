import Foundation
import IsletCore
import ServiceLifecycle
import Synchronization

/// Publishes committed transactions, off the store's writer: the `CommitLog` hands it each commit
/// in commit order, on a queue of the log's own; it offers the events to the bus, counts the
/// effects and the events (the overview's `EventTally`), wakes the deadline scheduler for a nearer deadline and the delivery sender for new
/// deliveries, and tells the caches what changed.
///
/// A change is acknowledged only once its commit is published (`published(through:)`), as
/// before the hand-off: an answer to a change means its events are on the streams and the
/// caches have forgotten what it replaced. The writer does not wait for any of it; the next
/// transaction runs meanwhile.
final class FanOut: Service, Sendable {
    private struct Progress {
        var published: UInt64 = 0
        var waiters: [(number: UInt64, run: @Sendable () -> Void)] = []
        var stopped = false
    }

    private let log: CommitLog
    private let bus: EventBus
    private let metrics: any EngineMetrics
    private let tally: EventTally
    private let deadlines: WakeSignal
    private let deliveries: WakeSignal
    private let webhooks: WebhookSignals
    private let observers: Mutex<[@Sendable (Effects) -> Void]>
    private let progress = Mutex(Progress())

    init(log: CommitLog, bus: EventBus, metrics: any EngineMetrics, tally: EventTally, deadlines: WakeSignal, deliveries: WakeSignal, webhooks: WebhookSignals) {
        self.log = log
        self.bus = bus
        self.metrics = metrics
        self.tally = tally
        self.deadlines = deadlines
        self.deliveries = deliveries
        self.webhooks = webhooks
        self.observers = Mutex([])
        log.read { [weak self] commit in self?.publish(commit) }
    }

    /// Adds a cache that must hear of effects (keys replaced), before the change is acknowledged.
    func observe(_ observer: @escaping @Sendable (Effects) -> Void) {
        observers.withLock { $0.append(observer) }
    }

    /// Runs until a graceful shutdown, then publishes what was committed by then and stops.
    func run() async throws {
        try? await gracefulShutdown()
        await log.drain()
        // Nothing publishes from now on: no one may wait for it.
        let waiters = progress.withLock { progress in
            progress.stopped = true
            defer { progress.waiters = [] }
            return progress.waiters
        }
        for waiter in waiters { waiter.run() }
    }

    private func publish(_ commit: Commit) {
        bus.publish(commit.events)
        metrics.published(commit)
        tally.count(commit.events)
        if let deadline = commit.earliestDeadline {
            deadlines.notify(deadline: deadline)
        }
        if commit.effects.deliveriesReady {
            deliveries.notify(deadline: .distantPast)
        }
        if !commit.events.isEmpty {
            webhooks.eventsCommitted()
        }
        if commit.effects.providerKeysChanged || !commit.effects.keysReplaced.isEmpty {
            for observer in observers.withLock({ $0 }) { observer(commit.effects) }
        }
        let ready = progress.withLock { progress -> [@Sendable () -> Void] in
            progress.published = commit.number
            var ready: [@Sendable () -> Void] = []
            progress.waiters.removeAll { waiter in
                guard waiter.number <= commit.number else { return false }
                ready.append(waiter.run)
                return true
            }
            return ready
        }
        for run in ready { run() }
    }

    /// Returns once the commit numbered `number` has been published (at once if it has been,
    /// or if publishing has stopped for good).
    func published(through number: UInt64) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            whenPublished(through: number) { continuation.resume() }
        }
    }

    /// Runs `run` once the commit numbered `number` has been published: at once, on this
    /// thread, if it has been (or publishing has stopped); else on the thread that publishes it.
    func whenPublished(through number: UInt64, _ run: @escaping @Sendable () -> Void) {
        let done = progress.withLock { progress -> Bool in
            if progress.published >= number || progress.stopped { return true }
            progress.waiters.append((number, run))
            return false
        }
        if done { run() }
    }
}
