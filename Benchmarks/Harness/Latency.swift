import ArgumentParser
import Foundation
import NIOCore
import NIOHTTP1

/// `islet-bench latency`: from sending an update to a subscriber receiving its event, at a fixed
/// offered load (open loop: every update has its scheduled time, and a late send counts as late).
struct Latency: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Update → subscriber latency at a fixed load, over SSE.")

    @OptionGroup var systems: Systems

    @Option(help: "Activities, each updated `rate` times a second.")
    var activities = 1000

    @Option(help: "Devices, one subscriber each; activities are spread over them.")
    var devices = 1000

    @Option(help: "Updates per second per activity.")
    var rate = 1.0

    @Option(help: "Seconds measured (after a warm-up of a fifth of it, at least 2 s).")
    var seconds = 10.0

    @Option(help: "Keep-alive connections that send the updates.")
    var connections = 64

    @Option(help: "Islet's store durability: full or normal.")
    var durability = "full"

    func run() async throws {
        let server = try await systems.startIslet(durability: durability)
        defer { server.stop() }
        print(try await measure(server).line)
    }

    struct Result {
        var system: String
        var activities: Int
        var subscribers: Int
        var rate: Double
        var latencies: [UInt64]
        var expected: Int
        var serverCPU: Double
        var harnessCPU: Double

        func percentile(_ p: Double) -> Double {
            guard !latencies.isEmpty else { return .nan }
            let index = min(latencies.count - 1, Int((Double(latencies.count) * p).rounded(.up)) - 1)
            return Double(latencies[max(0, index)]) / 1_000_000
        }

        var line: String {
            String(
                format: "latency %@ SSE %d activities × %.0f Hz, %d subscribers: p50 %.2f ms, p99 %.2f ms, p99.9 %.2f ms (%d of %d events; server CPU %d%%, harness CPU %d%%)",
                system, activities, rate, subscribers, percentile(0.5), percentile(0.99), percentile(0.999), latencies.count, expected,
                Int(serverCPU * 100), Int(harnessCPU * 100)
            )
        }
    }

    func measure(_ server: ServerUnderTest) async throws -> Result {
        let admin = try server.adminKey
        let setup = try await HTTPConnection.connect(host: "127.0.0.1", port: server.port)
        let key = try await IsletSetup.app(on: setup, admin: admin, bundleId: "com.bench.latency")
        await setup.close()
        let deviceCount = devices
        try await IsletSetup.devices(deviceCount, port: server.port, admin: admin)
        let ids = try await IsletSetup.activities(activities, port: server.port, key: key) { "d\($0 % deviceCount)" }

        let subscribers = try await withThrowingTaskGroup(of: EventSubscriber.self) { group in
            var subscribers: [EventSubscriber] = []
            for device in 0..<deviceCount {
                group.addTask {
                    try await EventSubscriber.connect(port: server.port, path: "/v1/events?device=d\(device)&coalesce=false", key: key)
                }
                if device >= 64 { subscribers.append(try await group.next()!) }  // at most 64 connecting at once
            }
            return try await group.reduce(into: subscribers) { $0.append($1) }
        }
        let senders = try await HTTPConnection.pool(connections, port: server.port)

        let warmUp = max(2, seconds / 5)
        let base = DispatchTime.now().uptimeNanoseconds + 200_000_000
        let end = base + UInt64((warmUp + seconds) * 1e9)
        let period = 1e9 / rate
        let count = ids.count
        let headers = [("Authorization", "Bearer \(key)")]
        var cpuAtStart = (0.0, 0.0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (lane, connection) in senders.enumerated() {
                let mine = Array(stride(from: lane, to: count, by: senders.count))
                group.addTask {
                    var round = 0
                    while true {
                        for index in mine {
                            // Activity `index` is due at an even spread over each period.
                            let due = base + UInt64((Double(round) + Double(index) / Double(count)) * period)
                            if due >= end { return }
                            let now = DispatchTime.now().uptimeNanoseconds
                            if due > now { try await Task.sleep(nanoseconds: due - now) }
                            let body = #"{"content":{"state":{"speed":27.4,"seq":\#(round),"sent":\#(due)}}}"#
                            _ = try await connection.send(.POST, "/v1/activities/\(ids[index])/update", headers: headers, body: ByteBuffer(string: body))
                        }
                        round += 1
                    }
                }
            }
            group.addTask {
                try await Task.sleep(nanoseconds: base + UInt64(warmUp * 1e9) - DispatchTime.now().uptimeNanoseconds)
                for subscriber in subscribers { try await subscriber.record(true) }
            }
            try await Task.sleep(nanoseconds: base + UInt64(warmUp * 1e9) - DispatchTime.now().uptimeNanoseconds)
            cpuAtStart = (server.cpuSeconds, ProcessCPU.seconds(of: getpid()))
            try await group.waitForAll()
        }
        let cpuAfter = (server.cpuSeconds, ProcessCPU.seconds(of: getpid()))
        try await Task.sleep(for: .seconds(1))  // the last events in flight
        var latencies: [UInt64] = []
        for subscriber in subscribers {
            try await subscriber.record(false)
            latencies += try await subscriber.latencies()
            await subscriber.close()
        }
        for sender in senders { await sender.close() }
        latencies.sort()
        return Result(
            system: server.name, activities: count, subscribers: subscribers.count, rate: rate, latencies: latencies,
            expected: Int(Double(count) * rate * seconds), serverCPU: (cpuAfter.0 - cpuAtStart.0) / seconds,
            harnessCPU: (cpuAfter.1 - cpuAtStart.1) / seconds
        )
    }
}
