import Foundation
import IsletCore
import Logging
import Synchronization
import ServiceLifecycle
import Tracing

/// How the outbox is drained.
public struct DeliverySettings: Sendable, Equatable {
    /// Requests in flight at once, over every host. A sender's rate is at most this divided by
    /// Apple's round trip (256 over 50 ms: 5,120 a second); Apple takes 1,000 streams on a
    /// connection.
    public var concurrency = 256
    /// HTTP/2 connections per host and trusted authority: each request goes on the one with the
    /// fewest in flight, and one lost under a request sends it again on another.
    public var connections = 2
    /// The longest wait between two attempts of one delivery, in seconds.
    public var maximumBackoff: TimeInterval = 300
    /// How long a sender holds a delivery it took before another may take it, in seconds: on
    /// several nodes, what a node that died was sending is sent by another after this.
    public var lease: TimeInterval = 60
    /// Whether this node sends deliveries. A node that does not still writes them to the
    /// outbox with its changes; another node on the same database sends them (docs/cluster.md).
    public var enabled = true

    /// The longest one request to Apple may take: half the lease, at most 30 s, so a node gives
    /// up on a request well before another node may take its delivery. In seconds.
    public var requestTimeout: TimeInterval { min(30, lease / 2) }
    /// Whether the sender waits for `Engine.serverIsListening()` before it sends anything: a
    /// server sets it, so that its API answers before the first delivery is attempted.
    public var waitsForListener = false

    public init() {}
}

/// Drains the outbox in rounds. Each round is one transaction: it writes down the answers that
/// came back since the last round and claims as many due deliveries as there is room for in
/// flight (`Engine.settleDeliveries`). The requests then go out through the transport, many at
/// once, and each answer frees its place at once and wakes the next round. At rest a round is
/// one answer or one delivery, so a single change goes at once; under load the answers and
/// claims of many requests share a round, and the store does a fraction of a transaction per
/// delivery. Between rounds the sender sleeps until the next delivery is due, a commit brings
/// one, or an answer comes back.
struct DeliverySender: Service {
    let engine: Engine
    let transport: any DeliveryTransport
    let settings: DeliverySettings
    let logger: Logger

    func run() async throws {
        let (engine, transport, settings, logger) = (self.engine, self.transport, self.settings, self.logger)
        // Whatever a delivery meets, the API is reachable first (to remove a credential, say).
        await cancelWhenGracefulShutdown { await engine.listening.wait() }
        guard !Task.isCancelled, !Task.isShuttingDownGracefully else { return }
        // What a sender of this store held when it stopped without finishing is sent again.
        if !engine.store.isShared {
            try? await engine.releaseAbandonedDeliveries()
        }
        let round = Round()
        // Under load, a round claims when a quarter of the places are free, not for every answer:
        // a claim reads what is due, and fewer, larger claims cost less per delivery.
        let batch = max(1, settings.concurrency / 4)
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                let answered = round.takeAnswers()
                let busy = round.inFlight
                let room = settings.concurrency - busy
                let limit = room >= batch || busy == 0 ? room : 0
                guard !answered.isEmpty || limit > 0 else {
                    // An answer wakes the loop.
                    await engine.deliveryWake.sleep(until: nil, on: engine.clock)
                    continue
                }
                var claimed: [ClaimedDelivery] = []
                var next: Date?
                do {
                    let settled = try await engine.settleDeliveries(
                        answered, claim: limit, lease: settings.lease, maximumBackoff: settings.maximumBackoff
                    )
                    (claimed, next) = (settled.claimed, settled.nextAttempt)
                } catch is CancellationError {
                    return
                } catch {
                    // One answer that cannot be written must not lose the others: each alone.
                    await Self.recordOneByOne(answered, engine: engine, settings: settings, logger: logger)
                    logger.error("The delivery sender failed; retrying in 1s", metadata: ["error": "\(error)"])
                    next = engine.clock.now().addingTimeInterval(1)
                }
                if !claimed.isEmpty {
                    // The whole batch to the transport at once; each answer frees its place and
                    // wakes the loop.
                    round.sent(claimed.count)
                    let sent = claimed
                    let spans = sent.map(Self.span)
                    transport.send(sent.map(\.request)) { index, answer in
                        Self.end(spans[index], of: sent[index], with: answer)
                        round.answered(AnsweredDelivery(claimed: sent[index], answer: answer))
                        engine.deliveryWake.notify(deadline: .distantPast)
                    }
                }
                if limit > 0 && claimed.count < limit {
                    // Nothing more due: on a shared store, other nodes' deliveries are found
                    // by looking again; a commit or an answer wakes it sooner.
                    await engine.deliveryWake.sleep(until: engine.wakeTime(next), on: engine.clock)
                }
            }
        }
        // Answers that came back as it stopped are written down, not left to their leases; what
        // is still out is not waited for (its lease gives it back).
        await Self.recordOneByOne(round.close(), engine: engine, settings: settings, logger: logger)
    }

    /// A span for a delivery's request, in the trace of the change that wrote it (its
    /// `traceparent`; docs/operations.md §1), ended with what Apple or FCM answered (`end`).
    static func span(_ delivery: ClaimedDelivery) -> any Span {
        Tracing.startSpan(delivery.isFCM ? "fcm.send" : "apns.send", context: TraceParent.context(delivery.delivery.traceparent), ofKind: .client)
    }

    /// Ends a delivery's span with its answer.
    static func end(_ span: any Span, of delivery: ClaimedDelivery, with answer: TransportAnswer) {
        span.attributes["islet.delivery.id"] = Int(delivery.delivery.id)
        span.attributes["islet.delivery.event"] = delivery.delivery.event.rawValue
        span.attributes["islet.delivery.attempt"] = delivery.delivery.attempts + 1
        span.attributes["islet.delivery.priority"] = delivery.priority
        if !delivery.isFCM { span.attributes["apns.id"] = answer.apnsId ?? delivery.delivery.apnsId }
        if let status = answer.status { span.attributes["http.response.status_code"] = status }
        if let reason = answer.reason { span.attributes[delivery.isFCM ? "fcm.error" : "apns.reason"] = reason }
        if answer.status != 200 { span.setStatus(SpanStatus(code: .error, message: answer.reason)) }
        span.end()
    }

    /// Sends one delivery's request, in its span (`span`).
    static func send(_ delivery: ClaimedDelivery, over transport: any DeliveryTransport) async -> TransportAnswer {
        let span = span(delivery)
        let answer = await transport.send(delivery.request)
        end(span, of: delivery, with: answer)
        return answer
    }

    /// Writes answers down one transaction each, logging those that cannot be.
    private static func recordOneByOne(_ answered: [AnsweredDelivery], engine: Engine, settings: DeliverySettings, logger: Logger) async {
        for answer in answered {
            do {
                try await engine.recordDelivery(answer.claimed, answer: answer.answer, maximumBackoff: settings.maximumBackoff)
            } catch {
                logger.error("Recording a delivery failed", metadata: ["delivery": "\(answer.claimed.delivery.id)", "error": "\(error)"])
            }
        }
    }
}

extension DeliverySender {
    /// Sends every delivery due now, as many at once as `settings.concurrency` allows, records
    /// each answer, and goes on while more become due; returns how many were sent.
    func sendDue() async throws -> Int {
        var sent = 0
        while true {
            let claimed = try await engine.claimDeliveries(limit: settings.concurrency, lease: settings.lease)
            if claimed.isEmpty { return sent }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for delivery in claimed {
                    group.addTask {
                        let answer = await Self.send(delivery, over: transport)
                        try await engine.recordDelivery(delivery, answer: answer, maximumBackoff: settings.maximumBackoff)
                    }
                }
                try await group.waitForAll()
            }
            sent += claimed.count
        }
    }
}

/// A sender's requests in flight and the answers waiting for the next round.
private final class Round: Sendable {
    private struct State {
        var inFlight = 0
        var answers: [AnsweredDelivery] = []
        var closed = false
    }

    private let state = Mutex(State())

    /// Requests sent and not answered yet.
    var inFlight: Int { state.withLock { $0.inFlight } }

    /// More requests on their way.
    func sent(_ count: Int) { state.withLock { $0.inFlight += count } }

    /// An answer came back: its place is free, the answer waits for the next round (unless the
    /// sender has stopped: then its lease gives the delivery back).
    func answered(_ answer: AnsweredDelivery) {
        state.withLock { state in
            state.inFlight -= 1
            if !state.closed { state.answers.append(answer) }
        }
    }

    /// The answers waiting, taken.
    func takeAnswers() -> [AnsweredDelivery] {
        state.withLock { state in
            defer { state.answers = [] }
            return state.answers
        }
    }

    /// The sender stops: the answers waiting, taken; those that come later are dropped.
    func close() -> [AnsweredDelivery] {
        state.withLock { state in
            state.closed = true
            defer { state.answers = [] }
            return state.answers
        }
    }
}
