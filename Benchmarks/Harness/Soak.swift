import ArgumentParser
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

/// `islet-bench soak`: a steady delivery load on Islet A for long enough to pass a short
/// retention period several times over, reporting every interval what should stay flat once
/// retention has passed once: A's memory, its data directory on disk, the outbox, the update
/// latency (p99) and the deliveries answered 200.
struct Soak: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "A steady delivery load past a short retention period, several times: memory, files, outbox and p99 over time."
    )

    @OptionGroup var systems: Systems

    @OptionGroup var store: StoreChoice

    @Option(help: "Phones: activities on A, each with an update token for the sink.")
    var phones = 200

    @Option(help: "Updates per second over all the phones, each one delivered to the sink.")
    var rate = 300.0

    @Option(help: "A's store.retention, in seconds: finished deliveries, events and dismissed activities older than it are deleted.")
    var retention = 60.0

    @Option(help: "Seconds the load runs.")
    var seconds = 300.0

    @Option(help: "Seconds between two readings.")
    var interval = 15.0

    @Option(help: "Connections sending the updates to A.")
    var connections = 16

    private static let bundleId = "com.bench.soak"

    func run() async throws {
        let loop = try await DeliveryBackend.start(
            systems: systems, store: store, phones: phones, sink: true, bundleId: Self.bundleId,
            environment: ["ISLET_STORE_RETENTION": "\(Int(retention))s"]
        )
        let (apple, backend, ids, auth) = (loop.apple, loop.backend, loop.ids, loop.auth)
        defer { apple.stop() }
        defer { backend.stop() }
        let data = backend.directory.appendingPathComponent("data")
        print(
            "soak: \(grouped(Double(phones))) phones on A (\(backend.name), durability \(store.durability), store.retention \(Int(retention)) s,"
                + " purged every \(Int(min(3600, max(1, retention / 10)))) s; builds before issue 29 hourly), each update delivered to \(apple.name); \(grouped(rate)) updates/s"
                + " over \(connections) connections for \(Int(seconds)) s; a reading every \(Int(interval)) s: A's VmRSS, its data directory"
                + " (every file), the outbox (/healthz), updates acknowledged and their p99, deliveries answered 200 (/metrics)"
        )
        print("soak   time   VmRSS KB   data dir KB (sqlite, wal)   outbox   updates/s   update p99 ms   delivered/s")

        let latencies = Latencies()
        let clock = ContinuousClock()
        let base = clock.now.advanced(by: .milliseconds(200))
        let end = base.advanced(by: .seconds(seconds))
        let period = Double(phones) / rate
        var readings: [Reading] = []
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<connections {
                group.addTask {
                    let connection = try await HTTPConnection.connect(port: backend.port)
                    let mine = Array(stride(from: lane, to: phones, by: connections))
                    var round = 0
                    while true {
                        for phone in mine {
                            let due = base.advanced(by: .seconds((Double(round) + Double(phone) / Double(phones)) * period))
                            if due >= end { return await connection.close() }
                            if clock.now < due { try await Task.sleep(until: due, clock: clock) }
                            let body = #"{"content":{"state":{"speed":\#(round % 60),"seq":\#(round)}}}"#
                            let sent = clock.now
                            let (status, _) = try await connection.send(
                                .POST, "/v1/activities/\(ids[phone])/update", headers: auth, body: ByteBuffer(string: body)
                            )
                            guard status == 200 else { throw HarnessError("an update refused: \(status)") }
                            let took = (clock.now - sent).components
                            latencies.add(UInt64(took.seconds) * 1_000_000_000 + UInt64(took.attoseconds / 1_000_000_000))
                        }
                        round += 1
                    }
                }
            }
            var delivered = try await DeliveryLatency.senderCounters(port: backend.port, auth: auth).requests
            var next = base
            while next < end {
                next = next.advanced(by: .seconds(interval))
                try await Task.sleep(until: min(next, end), clock: clock)
                let taken = latencies.take().sorted()
                let requests = try await DeliveryLatency.senderCounters(port: backend.port, auth: auth).requests
                let reading = Reading(
                    time: (clock.now - base) / .seconds(1), resident: backend.residentKilobytes,
                    files: Self.files(in: data), outbox: try await Self.outbox(port: backend.port),
                    updates: Double(taken.count) / interval, p99: percentile(0.99, of: taken), delivered: (requests - delivered) / interval
                )
                delivered = requests
                readings.append(reading)
                print(reading.line)
            }
            try await group.waitForAll()
        }
        print(Self.summary(readings, retention: retention))
    }

    /// One reading of the soak.
    struct Reading {
        var time: Double
        var resident: Int
        var files: [String: Int]
        var outbox: Int
        var updates: Double
        var p99: Double
        var delivered: Double

        /// Every file of the data directory, in KB.
        var disk: Int { files.values.reduce(0, +) }

        var line: String {
            let sqlite = files["islet.sqlite"] ?? 0, wal = files["islet.sqlite-wal"] ?? 0
            return "soak \(String(format: "%5.0f s", time))   \(grouped(Double(resident)))   \(grouped(Double(disk))) (\(grouped(Double(sqlite))), \(grouped(Double(wal))))"
                + "   \(outbox)   \(grouped(updates))   \(String(format: "%.1f", p99))   \(grouped(delivered))"
        }
    }

    /// What stayed flat: each reading once retention had passed three times, against the first
    /// reading after it had passed once.
    static func summary(_ readings: [Reading], retention: Double) -> String {
        guard let first = readings.first(where: { $0.time >= retention + min(3600, max(1, retention / 10)) }) else {
            return "soak: too short to pass retention once"
        }
        let late = readings.filter { $0.time >= 3 * retention }
        guard !late.isEmpty else { return "soak: too short to pass retention three times" }
        func spread(_ value: (Reading) -> Double) -> String {
            let ratios = late.map { value($0) / max(1, value(first)) }
            return String(format: "%.2f–%.2f×", ratios.min()!, ratios.max()!)
        }
        return "soak summary: against the reading at \(Int(first.time)) s (retention passed once), the \(late.count) readings from"
            + " \(Int(late.first!.time)) s (passed three times) on: data directory \(spread { Double($0.disk) }),"
            + " VmRSS \(spread { Double($0.resident) }), update p99 \(spread { $0.p99 }); outbox at most \(late.map(\.outbox).max()!)"
    }

    /// The files of a directory and their sizes, in KB.
    static func files(in directory: URL) -> [String: Int] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        var sizes: [String: Int] = [:]
        for name in names {
            let attributes = try? FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent(name).path)
            if let size = attributes?[.size] as? Int, (attributes?[.type] as? FileAttributeType) == .typeRegular { sizes[name] = size / 1024 }
        }
        return sizes
    }

    /// The outbox's unfinished deliveries, as A's `/healthz` says.
    static func outbox(port: Int) async throws -> Int {
        let connection = try await HTTPConnection.connect(port: port)
        defer { Task { await connection.close() } }
        let (_, health) = try await connection.send(.GET, "/healthz")
        let json = try JSONSerialization.jsonObject(with: Data(health.readableBytesView)) as? [String: Any]
        return ((json?["delivery"] as? [String: Any])?["outbox"] as? Int) ?? -1
    }
}

/// Update latencies, in nanoseconds, gathered by the lanes until a reading takes them.
private final class Latencies: Sendable {
    private let values = Mutex<[UInt64]>([])

    func add(_ value: UInt64) { values.withLock { $0.append(value) } }

    func take() -> [UInt64] {
        values.withLock { values in
            defer { values = [] }
            return values
        }
    }
}
