import ArgumentParser
import Foundation

/// What latency and fan-out share: subscribers connected, every activity updated at its
/// scheduled time (an open loop: a late send is not excused), and the arrivals of the updates
/// sent after the warm-up collected from every subscriber.
struct Deliveries {
    var fleet: Fleet
    /// Updates per second per activity.
    var rate: Double
    var warmUp: Double
    var seconds: Double
    /// Connections that send the updates (no more than there are activities).
    var connections: Int

    struct Result {
        /// Every measured update's arrival at every subscriber.
        var arrivals: [Arrival]
        /// Measured updates sent.
        var sent: Int
        var cpu: CPUUse
    }

    /// Runs the schedule against `subscribers`, already connected.
    func run(_ target: any Target, subscribers: [Subscription]) async throws -> Result {
        let senders = try await target.publishers(min(connections, fleet.activities))
        let base = DispatchTime.now().uptimeNanoseconds + 200_000_000
        let measured = base + UInt64(warmUp * 1e9)
        let end = measured + UInt64(seconds * 1e9)
        for subscriber in subscribers { try await subscriber.record(from: measured) }
        guard DispatchTime.now().uptimeNanoseconds < measured else {
            throw HarnessError("the warm-up (\(warmUp) s) ended before \(subscribers.count) subscribers were told to record; lengthen it")
        }
        let period = 1e9 / rate
        let count = fleet.activities
        var meter: CPUMeter?
        let sent = try await withThrowingTaskGroup(of: Int.self) { group in
            for (lane, sender) in senders.enumerated() {
                let mine = Array(stride(from: lane, to: count, by: senders.count))
                group.addTask {
                    var round = 0, sent = 0
                    while true {
                        for index in mine {
                            // Activity `index` is due at an even spread over each period.
                            let due = base + UInt64((Double(round) + Double(index) / Double(count)) * period)
                            if due >= end { return sent }
                            let now = DispatchTime.now().uptimeNanoseconds
                            if due > now { try await Task.sleep(nanoseconds: due - now) }
                            _ = try await sender.update(index, state: PayloadSize.tiny.state(sequence: round, sent: due))
                            if due >= measured { sent += 1 }
                        }
                        round += 1
                    }
                }
            }
            try await Task.sleep(nanoseconds: measured - min(measured, DispatchTime.now().uptimeNanoseconds))
            meter = CPUMeter(target)
            return try await group.reduce(0, +)
        }
        let cpu = meter!.use()
        try await Task.sleep(for: .seconds(1))  // the last deliveries in flight
        var arrivals: [Arrival] = []
        for subscriber in subscribers {
            arrivals += try await subscriber.arrivals()
            await subscriber.close()
        }
        for sender in senders { await sender.close() }
        return Result(arrivals: arrivals, sent: sent, cpu: cpu)
    }
}

/// Options every delivery workload takes.
struct DeliveryOptions: ParsableArguments {
    @Option(help: "Systems (comma-separated): \(SystemName.subscribable.replacingOccurrences(of: ",", with: ", ")), islet-postgres, islet-postgres-2.")
    var system = SystemName.subscribable

    @Option(help: "How Islet's subscribers connect: sse or ws (the peers have one way each).")
    var transport = Transport.sse

    @Option(help: "Updates per second per activity.")
    var rate = 1.0

    @Option(help: "Seconds measured.")
    var seconds = 10.0

    @Option(help: "Seconds of warm-up before (default: a fifth of the measured time, at least 2 s).")
    var warmUp: Double?

    func deliveries(fleet: Fleet, connections: Int) -> Deliveries {
        Deliveries(fleet: fleet, rate: rate, warmUp: warmUp ?? max(2, seconds / 5), seconds: seconds, connections: connections)
    }

    /// Starts each chosen system with `fleet`, runs `measure` on it, prints its line.
    func forEachSystem(_ systems: Systems, fleet: Fleet, _ measure: (any Target) async throws -> String) async throws {
        for name in try SystemName.list(system) {
            let target = try await name.start(systems, fleet: fleet, transport: transport)
            defer { target.stop() }
            print(try await measure(target))
        }
    }
}
