import ArgumentParser
import Foundation
import NIOCore

/// `islet-bench memory`: the server's resident memory idle, per stored activity and per
/// connected SSE subscriber, and its data directory's size on disk per activity.
struct Memory: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Islet's resident memory: idle, per stored activity, per connected SSE subscriber (beside a bare Hummingbird stream's); disk per activity."
    )

    @OptionGroup var systems: Systems

    @Option(help: "Activity counts at which memory is read, ascending (comma-separated).")
    var activities = "10000,100000"

    @Option(help: "Devices the activities are spread over, round-robin.")
    var devices = 1000

    @Option(help: "Connected SSE subscribers, one per device (devices are added up to this many).")
    var subscribers = 10_000

    @OptionGroup var store: StoreChoice

    @Option(help: "At most this many seconds waiting for memory to settle before each reading.")
    var settle = 30.0

    func validate() throws {
        let counts = try countList(activities, option: "--activities")
        guard counts == counts.sorted() else { throw ValidationError("--activities: ascending counts.") }
        guard devices > 0, subscribers >= 0 else { throw ValidationError("--devices must be positive, --subscribers not negative.") }
    }

    func run() async throws {
        let limit = grouped(Double(FileLimit.current))
        let server = try await systems.startIslet(durability: store.durability)
        defer {
            server.stop()
        }
        let reader = ResidentMemory(server: server, settle: settle)
        print("memory \(server.name): VmRSS of the server (/proc/\(server.pid)/status), each read once two reads 1 s apart agree within 1% (at most \(grouped(settle)) s); harness and server file limit \(limit)")
        let idle = try await reader.read()
        print("memory idle after start: \(idle.text)")

        let admin = try server.adminKey
        let setup = try await HTTPConnection.connect(port: server.port)
        let key = try await IsletSetup.app(on: setup, admin: admin, bundleId: "com.bench.memory")
        await setup.close()
        let deviceCount = devices
        // Every device now, subscribers' too, so that what follows adds only activities, then connections.
        try await IsletSetup.devices(max(deviceCount, subscribers), port: server.port, admin: admin)
        let afterDevices = try await reader.read()
        print("memory \(grouped(Double(max(deviceCount, subscribers)))) devices, no activities: \(afterDevices.text)")

        var created = 0
        var last = afterDevices
        for count in try countList(activities, option: "--activities") {
            let first = created
            _ = try await IsletSetup.activities(count - first, port: server.port, key: key) { "d\((first + $0) % deviceCount)" }
            created = count
            last = try await reader.read()
            let disk = DiskUsage(of: server.directory.appendingPathComponent("data"))
            print(
                "memory \(grouped(Double(count))) activities over \(grouped(Double(deviceCount))) devices: \(last.text),"
                    + " \(perItem(last.kilobytes - afterDevices.kilobytes, count)) per activity; data directory \(disk.text(per: count, "activity"))"
            )
        }

        guard subscribers > 0 else { return }
        let before = last
        let clock = ContinuousClock()
        let started = clock.now
        let connected = try await SubscriberCrowd.connect(subscribers, port: server.port, key: key)
        let connectSeconds = (clock.now - started) / .seconds(1)
        let with = try await reader.read()
        print(
            "memory \(grouped(Double(subscribers))) SSE subscribers (one per device, connected in \(String(format: "%.1f", connectSeconds)) s): \(with.text),"
                + " \(perItem(with.kilobytes - before.kilobytes, subscribers)) per subscriber"
        )
        await connected.close()

        try await measureWebSocketSubscribers()
        try await measureFloor()
    }

    /// The same subscribers over WebSocket, on an Islet of their own with the same devices (memory
    /// freed by the SSE subscribers would be reused, and hide theirs).
    private func measureWebSocketSubscribers() async throws {
        let server = try await systems.startIslet(durability: store.durability)
        defer { server.stop() }
        let admin = try server.adminKey
        let setup = try await HTTPConnection.connect(port: server.port)
        let key = try await IsletSetup.app(on: setup, admin: admin, bundleId: "com.bench.memory")
        await setup.close()
        try await IsletSetup.devices(max(devices, subscribers), port: server.port, admin: admin)
        let reader = ResidentMemory(server: server, settle: settle)
        let before = try await reader.read()
        let sockets = try await SubscriberCrowd.connect(subscribers, port: server.port, key: key, webSocket: true)
        try await IsletTarget.awaitSubscribers(subscribers, port: server.port, label: server.name)
        let with = try await reader.read()
        print(
            "memory \(grouped(Double(subscribers))) WebSocket subscribers (one per device, a new Islet with the same devices, no activities):"
                + " \(before.text), then \(with.text), \(perItem(with.kilobytes - before.kilobytes, subscribers)) per subscriber"
        )
        await sockets.close()
    }

    /// The same connections held open by Hummingbird's bare stream (`islet-bench ceiling`): what a
    /// streaming connection costs this HTTP stack before Islet does anything — held by the route
    /// (in the connection's task), and held by a channel handler as Islet holds its streams, on a
    /// plain HTTP/1.1 port and on one that can upgrade to WebSocket (Islet's).
    private func measureFloor() async throws {
        let floors: [(Ceiling.HeldBy, String)] = [
            (.route, "Hummingbird's bare handler"),
            (.pipeline, "a channel handler (the request never reaches the connection's task)"),
            (.pipelineUpgradable, "a channel handler behind the WebSocket upgrade channel (Islet's pipeline)"),
        ]
        for (streams, how) in floors {
            let server = try await systems.startCeiling(streams: streams)
            defer { server.stop() }
            let reader = ResidentMemory(server: server, settle: settle)
            let idle = try await reader.read()
            let connected = try await SubscriberCrowd.connect(subscribers, port: server.port, key: "")
            let with = try await reader.read()
            print(
                "memory floor, \(grouped(Double(subscribers))) streams held open by \(how) (islet-bench ceiling --streams \(streams.rawValue)):"
                    + " idle \(idle.text), then \(with.text), \(perItem(with.kilobytes - idle.kilobytes, subscribers)) per connection"
            )
            await connected.close()
        }
    }

    private func perItem(_ kilobytes: Int, _ count: Int) -> String {
        String(format: "%+.2f KB", Double(kilobytes) / Double(count))
    }
}

/// Islet's store durability, for the commands that measure Islet alone.
struct StoreChoice: ParsableArguments {
    @Option(help: "Islet's store durability: full or normal.")
    var durability = "full"
}

/// Positive whole numbers, comma-separated.
func countList(_ text: String, option: String) throws -> [Int] {
    let counts = text.split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) ?? 0 }
    guard !counts.isEmpty, counts.allSatisfy({ $0 > 0 }) else { throw ValidationError("\(option): positive counts, comma-separated.") }
    return counts
}

/// Reads a server's resident memory once it has settled.
struct ResidentMemory {
    let server: ServerUnderTest
    let settle: Double

    struct Reading {
        var kilobytes: Int
        var seconds: Double
        var settled: Bool

        var text: String {
            "\(grouped(Double(kilobytes))) KB" + (settled ? "" : " (still moving after \(grouped(seconds)) s)")
        }
    }

    /// Reads VmRSS every second until two reads agree within 1%, or `settle` seconds pass.
    func read() async throws -> Reading {
        let clock = ContinuousClock()
        let started = clock.now
        var previous = server.residentKilobytes
        while true {
            try await Task.sleep(for: .seconds(1))
            let current = server.residentKilobytes
            let seconds = (clock.now - started) / .seconds(1)
            let settled = abs(current - previous) * 100 <= previous
            if settled || seconds >= settle { return Reading(kilobytes: current, seconds: seconds, settled: settled) }
            previous = current
        }
    }
}

/// The space a directory's files take on disk (their sizes).
struct DiskUsage {
    var bytes = 0
    var files: [(name: String, bytes: Int)] = []

    init(of directory: URL) {
        let enumerator = FileManager.default.enumerator(atPath: directory.path)
        while let name = enumerator?.nextObject() as? String {
            // The files' sizes: Foundation's allocated size on Linux counts each block as 4 KB, not
            // 512 bytes (eight times too much); SQLite's files have no holes, so the two agree.
            let values = try? directory.appendingPathComponent(name).resourceValues(forKeys: [.isRegularFileKey, .fileSizeKey])
            guard values?.isRegularFile == true, let size = values?.fileSize else { continue }
            bytes += size
            files.append((name, size))
        }
    }

    func text(per count: Int, _ item: String) -> String {
        let parts = files.filter { $0.bytes >= 1 << 20 }.sorted { $0.bytes > $1.bytes }
            .map { "\($0.name) \(String(format: "%.1f", Double($0.bytes) / 1_048_576)) MB" }
        return String(format: "%.1f MB on disk, %.2f KB per %@", Double(bytes) / 1_048_576, Double(bytes) / 1024 / Double(count), item)
            + (parts.isEmpty ? "" : " (\(parts.joined(separator: ", ")))")
    }
}

/// Many SSE or WebSocket subscribers held open at once: `d0` … `d<count-1>`, one each.
struct SubscriberCrowd {
    let subscribers: [Subscription]

    /// Connects them 64 at a time, over SSE or WebSocket.
    static func connect(_ count: Int, port: Int, key: String, webSocket: Bool = false) async throws -> SubscriberCrowd {
        SubscriberCrowd(subscribers: try await Lanes.run(count, width: 64) { devices in
            var mine: [Subscription] = []
            for device in devices {
                mine.append(try await webSocket
                    ? WebSocketSubscriber.connect(port: port, path: "/v1/events/ws?device=d\(device)", key: key)
                    : SSESubscriber.connect(port: port, path: "/v1/events?device=d\(device)", key: key))
            }
            return mine
        })
    }

    func close() async {
        for subscriber in subscribers { await subscriber.close() }
    }
}
