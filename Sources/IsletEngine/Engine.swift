import Foundation
import IsletCore
import Logging
import ServiceContextModule
import ServiceLifecycle
import Tracing

/// Islet's application layer: every use case — start, update, end, dismiss, pushes, settings,
/// layouts, keys, tokens, deadlines, retention — written once, over a narrow transactional
/// store (`Store`). It is the only way in: routes, services and tools call its operations and
/// never see the store.
///
/// A change runs as one transaction on the store's writer: load → the core's rules decide →
/// save → record events. It is acknowledged once committed and published (`FanOut`), so an
/// answer means the change is durable, on the streams and in the metrics.
public final class Engine: Sendable {
    /// The time source.
    public let clock: any WallClock
    /// The lifecycle rules the engine applies.
    public let rules: LifecycleRules
    /// The bus that streams committed events.
    public let bus: EventBus
    /// What must run for the engine to work, in start order: its `essentials`, then its `timers`.
    /// Run them in a `ServiceGroup` in this order; they shut down in the reverse one.
    public var services: [any Service] { essentials + timers }

    /// What every change needs: the store's writer, the fan-out that publishes commits, the
    /// bus, and the delivery transport's connections. A tool or a test that moves time by hand
    /// runs only these.
    public var essentials: [any Service] {
        [StoreWriter(store: store), fanOut, bus] + [transport as? any Service, webhookTransport as? any Service].compactMap { $0 }
    }

    /// What time does by itself: the deadline scheduler, history retention, (when configured)
    /// token rotation, and (with a transport) the delivery sender.
    public var timers: [any Service] {
        var timers: [any Service] = [
            DeadlineScheduler(engine: self, logger: logger),
            HistoryRetention(engine: self, retention: settings.retention, logger: logger),
        ]
        if settings.tokenRotation > 0 {
            timers.append(TokenRotation(engine: self, interval: settings.tokenRotation, logger: logger))
        }
        if let transport, settings.delivery.enabled {
            timers.append(DeliverySender(engine: self, transport: transport, settings: settings.delivery, logger: logger))
        }
        timers.append(SendRunner(engine: self, logger: logger))
        if let webhookTransport, settings.webhooks.enabled {
            timers.append(WebhookDispatcher(engine: self, transport: webhookTransport, settings: settings.webhooks, logger: logger))
        }
        return timers
    }

    /// The delivery sender (docs/delivery.md), as a test drives it by hand: every delivery due
    /// now is sent and its answer recorded; returns how many were sent.
    public func sendDueDeliveries() async throws -> Int {
        guard let transport else { return 0 }
        let sender = DeliverySender(engine: self, transport: transport, settings: settings.delivery, logger: logger)
        return try await sender.sendDue()
    }

    let store: any Store
    let fanOut: FanOut
    let tally: EventTally
    let deadlines = WakeSignal()
    let deliveryWake = WakeSignal()
    /// Wakes the send runner: a send made or moved here.
    let sendWake = WakeSignal()
    /// Between the fan-out, the webhook use cases and the dispatcher.
    let webhooks = WebhookSignals()
    let webhookTransport: (any WebhookTransport)?
    /// Opened once the server answers (`serverIsListening()`); the delivery sender waits for it
    /// when `DeliverySettings.waitsForListener` says so.
    let listening: Gate
    let transport: (any DeliveryTransport)?
    let presentations: Presentations
    let keys: KeyCache
    /// FCM's per-device quota as this node's sender spends it: a message to an Android phone
    /// past it waits (docs/android.md, "Android's limits").
    let fcmPacing = DeviceQuotas(.fcmSender)
    /// The priority-10 requests this node's sender has out, which the phone's budget counts
    /// before the store does (`PhoneBudget`).
    let inFlightBudget = PhoneBudget.InFlight()
    /// When this node last wrote each installation seen (`installationUsed`).
    let installationsSeen = SeenRecently()
    let settings: EngineSettings
    let metrics: any EngineMetrics
    let logger: Logger

    /// Builds the engine over an opened store.
    ///
    /// - Parameters:
    ///   - store: Where data lives; the engine runs it (`services`).
    ///   - settings: The rules, the streams and the periodic work.
    ///   - clock: The time source; a `ManualClock` in tests.
    ///   - metrics: Where counts go.
    ///   - draw: Draws a layout (the renderer).
    ///   - transport: Sends deliveries to Apple; without one, deliveries wait in the outbox.
    ///   - webhookTransport: Sends webhooks (docs/webhooks.md); without one, none are sent.
    ///   - logger: Where the services log.
    public init(
        store: any Store, settings: EngineSettings = EngineSettings(), clock: any WallClock, metrics: any EngineMetrics = NoMetrics(),
        draw: @escaping Drawing, transport: (any DeliveryTransport)? = nil, webhookTransport: (any WebhookTransport)? = nil, logger: Logger
    ) {
        self.store = store
        self.webhookTransport = webhookTransport
        self.keys = KeyCache(lifetime: store.isShared ? Self.sharedStaleness : nil)
        self.transport = transport
        self.clock = clock
        self.rules = settings.rules
        self.bus = EventBus(settings: settings.streams, metrics: metrics, clock: clock)
        self.tally = EventTally(since: clock.now())
        self.fanOut = FanOut(log: store.commits, bus: bus, metrics: metrics, tally: tally, deadlines: deadlines, deliveries: deliveryWake, webhooks: webhooks)
        self.presentations = Presentations(draw: draw, clock: clock)
        self.settings = settings
        self.metrics = metrics
        self.listening = Gate(open: !settings.delivery.waitsForListener)
        self.logger = logger
        let keys = self.keys
        fanOut.observe { effects in keys.forget(effects.keysReplaced) }
    }

    /// Says that the server answers on its API port: the delivery sender, when it waits for
    /// that (`DeliverySettings.waitsForListener`), starts sending.
    public func serverIsListening() {
        listening.open()
    }

    /// How stale what a node keeps of shared data may be when other nodes write it (docs/cluster.md):
    /// a node learns of another's deadlines, deliveries and key changes by looking again this
    /// often, not by being told.
    public static let sharedStaleness: Duration = .seconds(1)

    /// When a timer that sleeps towards `next` looks again: at `next`, or sooner when other
    /// nodes may have brought work nearer (a shared store).
    func wakeTime(_ next: Date?) -> Date? {
        guard store.isShared else { return next }
        let soon = clock.now().addingTimeInterval(Double(Self.sharedStaleness.components.seconds))
        return min(next ?? soon, soon)
    }

    /// Tells `observer` of every committed change's effects that concern caches outside the
    /// engine (provider keys added or removed), before the change is acknowledged.
    public func observeEffects(_ observer: @escaping @Sendable (Effects) -> Void) {
        fanOut.observe(observer)
    }

    /// Changes the store ran again because another transaction held what they lock
    /// (`Store.changesRunAgain`), for `/metrics`.
    public var changesRunAgain: Int { store.changesRunAgain }

    /// Reads of events from a shared store by this node's tail, by cause (`Store.eventReads`), for `/metrics`.
    public var eventReads: [String: Int] { store.eventReads }

    /// What the store is and where (`Store.kind`, `location`, `isShared`), for `/healthz`.
    public var storeFacts: (kind: String, location: String, shared: Bool) {
        (store.kind, store.location, store.isShared)
    }

    /// The store, and what a failover of its database keeps, asked of it now: `/healthz`'s
    /// `store` and the overview's.
    public func storeOverview() async throws -> StoreOverview {
        StoreOverview(kind: store.kind, location: store.location, shared: store.isShared, replication: try await store.replication())
    }

    // MARK: The two ways to the store

    /// Runs a use case in the next write transaction; returns once it committed and was published.
    /// `activity`: the activity it changes, when known before it runs (`Store.write`).
    ///
    /// Traced (docs/operations.md §1): within a trace (a request's), a span waits for the commit
    /// and the fan-out, and the use case runs, on the store's writer, in that span's context, so
    /// what it writes to the outbox keeps the trace (`TraceParent`). The timers' own changes
    /// (deadlines, the sender's rounds) start no trace of their own.
    func write<T: Sendable>(about activity: ActivityID? = nil, _ work: @escaping @Sendable (any Transaction) throws -> T) async throws -> T {
        // A request that gave an Idempotency-Key: its change holds the key, in the same transaction.
        if let claim = IdempotencyClaim.current {
            return try await IdempotencyClaim.$current.withValue(nil) {
                try await write(about: activity) { tx in
                    try Self.hold(claim, in: tx)
                    return try work(tx)
                }
            }
        }
        guard ServiceContext.current != nil else { return try await commit(about: activity, work) }
        return try await withSpan("islet.commit") { span in
            if let activity { span.attributes["islet.activity.id"] = activity }
            let context = ServiceContext.current
            return try await commit(about: activity) { tx in try ServiceContext.withValue(context) { try work(tx) } }
        }
    }

    private func commit<T: Sendable>(about activity: ActivityID?, _ work: @escaping @Sendable (any Transaction) throws -> T) async throws -> T {
        let committed = try await store.write(now: clock.now(), about: activity, work)
        await fanOut.published(through: committed.commit)
        return committed.value
    }

    /// Runs reads on committed data.
    func read<T: Sendable>(_ work: @escaping @Sendable (any StoreReading) throws -> T) async throws -> T {
        try await store.read(work)
    }
}

/// What the engine is configured with.
public struct EngineSettings: Sendable {
    /// The lifecycle rules.
    public var rules = LifecycleRules()
    /// How event streams behave.
    public var streams = StreamSettings()
    /// How long dismissed activities and events are kept, in seconds.
    public var retention: TimeInterval = 7 * 86_400
    /// Every token is rotated this often, in seconds; 0 never.
    public var tokenRotation: TimeInterval = 0
    /// How the outbox is drained.
    public var delivery = DeliverySettings()
    /// How webhooks are sent (docs/webhooks.md).
    public var webhooks = WebhookSettings()

    /// The defaults.
    public init() {}
}

/// The store's writer as one of the engine's services.
struct StoreWriter: Service {
    let store: any Store

    func run() async throws {
        try await store.run()
    }
}
