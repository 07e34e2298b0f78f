import Foundation
import IsletCore
import Logging
import Synchronization
import ServiceLifecycle

/// How the outbox is drained.
public struct DeliverySettings: Sendable, Equatable {
    /// Requests in flight at once, over every host.
    public var concurrency = 64
    /// The longest wait between two attempts of one delivery, in seconds.
    public var maximumBackoff: TimeInterval = 300
    /// How long a sender holds a delivery it took before another may take it, in seconds: on
    /// several nodes, what a node that died was sending is sent by another after this.
    public var lease: TimeInterval = 60

    /// The longest one request to Apple may take: half the lease, at most 30 s, so a node gives
    /// up on a request well before another node may take its delivery. In seconds.
    public var requestTimeout: TimeInterval { min(30, lease / 2) }
    /// Whether the sender waits for `Engine.serverIsListening()` before it sends anything: a
    /// server sets it, so that its API answers before the first delivery is attempted.
    public var waitsForListener = false

    public init() {}
}

/// Drains the outbox: takes the deliveries whose turn and time have come, sends each through
/// the transport (many at once), writes down what Apple answered, and sleeps until the next is
/// due — or until a commit brings one.
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
        let inFlight = InFlight()
        // Under load, deliveries are claimed a batch at a time, not one per answer: each claim is
        // a query over what is due (and a write), so claiming one at a time would cost one of
        // each per request. A quarter of the concurrency waits at most a quarter of a round trip.
        let batch = max(1, settings.concurrency / 4)
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                while !Task.isCancelled {
                    let busy = inFlight.count
                    let room = settings.concurrency - busy
                    guard room >= batch || busy == 0 else {
                        // A completion wakes the loop when a batch has room.
                        await engine.deliveryWake.sleep(until: nil, on: engine.clock)
                        continue
                    }
                    var claimed: [ClaimedDelivery] = []
                    var next: Date?
                    do {
                        claimed = try await engine.claimDeliveries(limit: room, lease: settings.lease)
                        if claimed.isEmpty { next = try await engine.nextDeliveryAttempt() }
                    } catch is CancellationError {
                        return
                    } catch {
                        logger.error("The delivery sender failed; retrying in 1s", metadata: ["error": "\(error)"])
                        next = engine.clock.now().addingTimeInterval(1)
                    }
                    for delivery in claimed {
                        inFlight.add()
                        group.addTask {
                            defer {
                                // Wakes the loop when a batch has room (or nothing is left in flight).
                                let left = inFlight.remove()
                                if settings.concurrency - left >= batch || left == 0 { engine.deliveryWake.notify(deadline: .distantPast) }
                            }
                            let answer = await transport.send(delivery.request)
                            // Stopping mid-request: the lease gives it back, nothing is written.
                            guard !Task.isCancelled else { return }
                            do {
                                try await engine.recordDelivery(delivery, answer: answer, maximumBackoff: settings.maximumBackoff)
                            } catch {
                                logger.error("Recording a delivery failed", metadata: ["delivery": "\(delivery.delivery.id)", "error": "\(error)"])
                            }
                        }
                    }
                    if claimed.isEmpty {
                        // On a shared store, other nodes' deliveries are found by looking again.
                        await engine.deliveryWake.sleep(until: engine.wakeTime(next), on: engine.clock)
                    }
                }
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
                        let answer = await transport.send(delivery.request)
                        try await engine.recordDelivery(delivery, answer: answer, maximumBackoff: settings.maximumBackoff)
                    }
                }
                try await group.waitForAll()
            }
            sent += claimed.count
        }
    }
}

/// The number of requests a sender has in flight.
private final class InFlight: Sendable {
    private let value = Mutex(0)
    var count: Int { value.withLock { $0 } }
    func add() { value.withLock { $0 += 1 } }
    /// Takes one away; returns how many are left.
    @discardableResult
    func remove() -> Int { value.withLock { $0 -= 1; return $0 } }
}
