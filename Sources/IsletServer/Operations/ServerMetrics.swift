import Foundation
import IsletCore
import IsletEngine
import Prometheus
import Synchronization

/// Islet's own Prometheus metrics, in a registry per server (tests run many servers in one
/// process). `GET /metrics` emits this registry.
public final class ServerMetrics: EngineMetrics {
    /// The registry `GET /metrics` emits.
    public let registry: PrometheusCollectorRegistry
    private let activities: [ActivityState: Gauge]
    private let updatesApplied: Counter
    private let updatesIgnored: [IgnoreReason: Counter]
    private let eventsPublished: [EventType: Counter]
    private let subscribers: Gauge
    private let coalesced: Counter
    private let overflows: Counter
    private let deadlinesFired: Counter
    private let pushesDelivered: Counter
    private let pushesDropped: [IgnoreReason: Counter]
    private let deliveryLatency: DurationHistogram
    private let deliveredSinceChange: DurationHistogram
    private let deliveryRounds: Counter
    private let outboxDepth: Gauge
    private let outboxOldest: Gauge
    private let changesRunAgain: MirroredCounter
    private let eventReads = Mutex([String: MirroredCounter]())
    private let storeWritable: Gauge
    private let webhookLatency: DurationHistogram
    private let webhookEndpoints: [String: Gauge]
    private let credentialsRefused: Gauge

    /// Creates the metrics in `registry`.
    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
        activities = Dictionary(uniqueKeysWithValues: ActivityState.allCases.map { state in
            (state, registry.makeGauge(
                descriptor: .islet("activities", help: "Activities by lifecycle state."), labels: [("state", state.rawValue)]
            ))
        })
        updatesApplied = registry.makeCounter(
            descriptor: .islet("updates_applied", unit: "total", help: "Content updates applied (REST, CLI, SDK and pushes).")
        )
        updatesIgnored = Dictionary(uniqueKeysWithValues: IgnoreReason.allCases.map { reason in
            (reason, registry.makeCounter(
                descriptor: .islet("updates_ignored", unit: "total", help: "Updates ignored by the lifecycle rules, by reason."),
                labels: [("reason", reason.rawValue)]
            ))
        })
        eventsPublished = Dictionary(uniqueKeysWithValues: EventType.allCases.map { type in
            (type, registry.makeCounter(
                descriptor: .islet("events", unit: "total", help: "Events committed, by type."), labels: [("type", type.rawValue)]
            ))
        })
        subscribers = registry.makeGauge(descriptor: .islet("subscribers", help: "Connected event stream subscribers."))
        coalesced = registry.makeCounter(descriptor: .islet(
            "events_coalesced", unit: "total",
            help: "Queued content updates a slow subscriber skipped because a newer one replaced them."
        ))
        overflows = registry.makeCounter(descriptor: .islet(
            "subscriber_overflows", unit: "total",
            help: "Subscribers disconnected because their queue filled up; they resume from their last event id."
        ))
        deadlinesFired = registry.makeCounter(descriptor: .islet(
            "deadlines_fired", unit: "total", help: "Activities changed by their deadlines (start, stale, end, dismissal)."
        ))
        pushesDelivered = registry.makeCounter(
            descriptor: .islet("pushes", unit: "total", help: "APNs-format pushes a device took or dropped, by outcome."),
            labels: [("outcome", "delivered"), ("reason", "")]
        )
        pushesDropped = Dictionary(uniqueKeysWithValues: IgnoreReason.allCases.map { reason in
            (reason, registry.makeCounter(
                descriptor: .islet("pushes", unit: "total", help: "APNs-format pushes a device took or dropped, by outcome."),
                labels: [("outcome", "dropped"), ("reason", reason.rawValue)]
            ))
        })
        deliveryLatency = registry.makeDurationHistogram(
            descriptor: .islet("delivery_latency", unit: "seconds", help: "From sending a delivery request to Apple's or FCM's answer."),
            buckets: [.milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
                      .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(5), .seconds(10), .seconds(30)]
        )
        deliveredSinceChange = registry.makeDurationHistogram(
            descriptor: .islet(
                "delivery_latency_from_change", unit: "seconds",
                help: "From the commit of a change to the answer that delivered it (Apple's or FCM's 200): queueing, retries and the request."
            ),
            buckets: [.milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
                      .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(5), .seconds(10), .seconds(30), .seconds(60)]
        )
        deliveryRounds = registry.makeCounter(descriptor: .islet(
            "delivery_rounds", unit: "total",
            help: "Rounds of the delivery sender: one store transaction each, writing down the answers that came back and claiming due deliveries."
        ))
        changesRunAgain = MirroredCounter(registry.makeCounter(descriptor: .islet(
            "store_changes_run_again", unit: "total",
            help: "Changes run again because another transaction held what they lock (nodes sharing one PostgreSQL database)."
        )))
        credentialsRefused = registry.makeGauge(descriptor: .islet(
            "delivery_credentials_refused",
            help: "Delivery credentials (an app's, in one environment) Apple or Google refused, not changed since: their deliveries are held."
        ))
        storeWritable = registry.makeGauge(descriptor: .islet(
            "store_writable", help: "1 while the store takes writes; 0 once they fail for the storage's own reasons (a full disk)."
        ))
        webhookLatency = registry.makeDurationHistogram(
            descriptor: .islet("webhook_latency", unit: "seconds", help: "From sending a webhook request to its answer (or its failure)."),
            buckets: [.milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
                      .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(5), .seconds(10), .seconds(30)]
        )
        webhookEndpoints = Dictionary(uniqueKeysWithValues: ["sending", "failing", "disabled"].map { state in
            (state, registry.makeGauge(
                descriptor: .islet("webhook_endpoints", help: "Webhook endpoints: sending, holding on a failing event, or disabled."),
                labels: [("state", state)]
            ))
        })
        outboxDepth = registry.makeGauge(descriptor: .islet("outbox_depth", help: "Deliveries not finished: waiting, held or being sent."))
        outboxOldest = registry.makeGauge(descriptor: .islet(
            "outbox_oldest_age", unit: "seconds", help: "How long the oldest unfinished delivery has waited."
        ))
    }

    /// Counts a published commit: its events by type, and what its effects say happened.
    public func published(_ commit: Commit) {
        for event in commit.events { eventsPublished[event.type]?.increment() }
        let effects = commit.effects
        if effects.updatesApplied > 0 { updatesApplied.increment(by: Int64(effects.updatesApplied)) }
        for (reason, count) in effects.updatesIgnored { updatesIgnored[reason]?.increment(by: Int64(count)) }
        if effects.pushesDelivered > 0 { pushesDelivered.increment(by: Int64(effects.pushesDelivered)) }
        for (reason, count) in effects.pushesDropped { pushesDropped[reason]?.increment(by: Int64(count)) }
        if effects.deadlinesFired > 0 { deadlinesFired.increment(by: Int64(effects.deadlinesFired)) }
        if effects.deliveryRounds > 0 { deliveryRounds.increment(by: Int64(effects.deliveryRounds)) }
        for answer in effects.deliveryAnswers {
            // By the status and reason of Apple's (or FCM's) answer; "none" when there was no answer.
            registry.makeCounter(
                descriptor: .islet("delivery_requests", unit: "total", help: "Delivery requests to Apple or FCM, by the answer's status and reason."),
                labels: [("status", answer.status.map(String.init) ?? "none"), ("reason", answer.reason ?? "")]
            ).increment()
            deliveryLatency.record(answer.latency)
            if let sinceChange = answer.sinceChange { deliveredSinceChange.record(sinceChange) }
        }
    }

    public func subscriberCountChanged(by delta: Int) { subscribers.increment(by: Double(delta)) }
    public func eventCoalesced() { coalesced.increment() }
    public func subscriberOverflowed() { overflows.increment() }

    public func webhookAnswered(_ answer: WebhookAnswer) {
        // By status: "none" when there was no answer (refused, timed out, a refused address).
        registry.makeCounter(
            descriptor: .islet("webhook_requests", unit: "total", help: "Webhook requests, by the answer's HTTP status."),
            labels: [("status", answer.status.map(String.init) ?? "none")]
        ).increment()
        webhookLatency.record(.milliseconds(answer.latencyMs))
    }

    public func webhookEndpoints(sending: Int, failing: Int, disabled: Int) {
        webhookEndpoints["sending"]?.set(Double(sending))
        webhookEndpoints["failing"]?.set(Double(failing))
        webhookEndpoints["disabled"]?.set(Double(disabled))
    }

    /// The outbox's depth and the age of its oldest unfinished delivery, as a scrape finds them.
    func setOutbox(_ health: DeliveryHealth, now: Date) {
        outboxDepth.set(Double(health.depth))
        outboxOldest.set(health.oldest.map { max(0, now.timeIntervalSince($0)) } ?? 0)
        credentialsRefused.set(Double(health.refusedCredentials.count))
    }

    /// Whether the store takes writes, and the space left beside a SQLite database, as a scrape finds them.
    func setStore(writable: Bool, disk: DiskSpace?) {
        storeWritable.set(writable ? 1.0 : 0.0)
        // Made at the first scrape that has them: a node on PostgreSQL has no such series.
        guard let disk else { return }
        registry.makeGauge(descriptor: .islet(
            "store_disk_available", unit: "bytes", help: "Bytes still free to Islet on the file system of the SQLite database."
        )).set(Double(disk.available))
        registry.makeGauge(descriptor: .islet(
            "store_disk_size", unit: "bytes", help: "The size of the file system of the SQLite database."
        )).set(Double(disk.size))
    }

    /// The store's counts of changes run again and of event reads, as a scrape finds them.
    func setStoreCounts(changesRunAgain: Int, eventReads: [String: Int]) {
        self.changesRunAgain.mirror(changesRunAgain)
        for (cause, total) in eventReads {
            let counter = self.eventReads.withLock { counters in
                if let counter = counters[cause] { return counter }
                let counter = MirroredCounter(registry.makeCounter(
                    descriptor: .islet(
                        "store_event_reads", unit: "total",
                        help: "Reads of events from PostgreSQL by this node's event tail, by cause: what its own commits and the notifications did not bring."
                    ),
                    labels: [("cause", cause)]
                ))
                counters[cause] = counter
                return counter
            }
            counter.mirror(total)
        }
    }

    func setActivityCounts(_ counts: [ActivityState: Int]) {
        for (state, gauge) in activities {
            gauge.set(Double(counts[state] ?? 0))
        }
    }
}

extension MetricNameDescriptor {
    static func islet(_ name: String, unit: String = "", help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "islet", metricName: name, unitName: unit, helpText: help)
    }
}

/// A Prometheus counter that follows a total kept elsewhere (the store's), read at each scrape.
private final class MirroredCounter: Sendable {
    private let counter: Counter
    private let seen = Mutex(0)

    init(_ counter: Counter) {
        self.counter = counter
    }

    /// Adds what `total` grew by since the last scrape.
    func mirror(_ total: Int) {
        let added = seen.withLock { seen in
            defer { seen = max(seen, total) }
            return max(0, total - seen)
        }
        if added > 0 { counter.increment(by: Int64(added)) }
    }
}
