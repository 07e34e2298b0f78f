import ArgumentParser
import Foundation

/// `islet-bench`: Islet's speed, memory and scaling beside the systems people would use instead.
/// Design: Benchmarks/README.md.
@main
struct IsletBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "islet-bench",
        abstract: "Load harness: Islet and its peers on loopback, the same workload through the same harness.",
        subcommands: [
            All.self, Ingest.self, Latency.self, Fanout.self, Memory.self, Startup.self, APNsPushes.self, DeliveryLatency.self, DeliverySend.self, Ceiling.self,
            Sink.self, SQLiteAlone.self, Regression.self, Soak.self, WebhooksBench.self, SendsBench.self,
        ]
    )
}

/// Where the systems under test come from.
struct Systems: ParsableArguments {
    @Option(help: "The islet binary (default: next to this one).")
    var islet: String?

    var isletPath: String {
        islet ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("islet").path
    }

    @Option(help: "An earlier islet binary, for the *-before systems: before and after a change, in one run.")
    var isletBefore: String?

    @Option(help: "The PostgreSQL systems' pool_size (docs/cluster.md; a node's writer lanes follow it), for the -1ms system: 1ms:22 sets it there only.")
    var poolSize: String?

    /// The `pool_size` a PostgreSQL system's nodes are given: `--pool-size 22`, or `1ms:22` for
    /// the system behind added latency only.
    func poolSize(behindLatency: Bool) -> Int? {
        guard let poolSize else { return nil }
        if poolSize.hasPrefix("1ms:") { return behindLatency ? Int(poolSize.dropFirst(4)) : nil }
        return Int(poolSize)
    }

    /// The same systems, with the `--islet-before` binary as Islet.
    func before() throws -> Systems {
        guard let isletBefore else { throw ValidationError("The *-before systems need --islet-before <an earlier islet binary>.") }
        var systems = self
        systems.islet = isletBefore
        systems.tag = " before"
        return systems
    }

    /// What result lines add to "islet" for the `--islet-before` binary.
    var tag = ""

    enum CodingKeys: CodingKey { case islet, isletBefore, poolSize, natsServer, mosquitto, redisServer }

    @Option(help: "The NATS server binary.")
    var natsServer = "/usr/sbin/nats-server"

    @Option(help: "The Mosquitto binary.")
    var mosquitto = "/usr/sbin/mosquitto"

    @Option(help: "The Redis server binary.")
    var redisServer = "/usr/bin/redis-server"

    var harnessPath: String { URL(fileURLWithPath: CommandLine.arguments[0]).path }

    /// A fresh directory for one run of one system.
    func scratch(_ name: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("islet-bench-\(name)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// `islet serve` on a free port, with limits out of the way and the given durability.
    ///
    /// - Parameters:
    ///   - directory: A directory an earlier run left (its `data` is reused); default: a fresh one.
    ///   - apns: Whether the APNs endpoint runs (on a free port: `ServerUnderTest.apnsPort`).
    func startIslet(
        durability: String, directory: URL? = nil, apns: Bool = false, name: String? = nil, environment: [String: String] = [:]
    ) async throws -> ServerUnderTest {
        let directory = try directory ?? scratch("islet")
        return try await ServerUnderTest(
            name: name ?? "islet (\(durability))", executable: isletPath,
            arguments: ["serve", "--port", "0", "--data", directory.appendingPathComponent("data").path, "--log-level", "warning"],
            environment: [
                "ISLET_APNS_ENABLED": "\(apns)", "ISLET_APNS_PORT": "0", "ISLET_STORE_DURABILITY": durability,
                "ISLET_LIFECYCLE_MAX_ACTIVITIES_PER_APP": "1000000", "ISLET_LIFECYCLE_MAX_ACTIVITIES_PER_DEVICE": "1000000",
            ].merging(environment) { _, new in new },
            directory: directory, waitForAPNs: apns
        )
    }

    func startCeiling(streams: Ceiling.HeldBy = .route) async throws -> ServerUnderTest {
        try await ServerUnderTest(
            name: "hummingbird (empty handler)", executable: harnessPath, arguments: ["ceiling", "--streams", streams.rawValue],
            directory: try scratch("ceiling-\(streams.rawValue)")
        )
    }

    /// Starts `islet-bench sink` (HTTP/2 over TLS, every push answered 200 at once); its
    /// certificate is `cert.pem` in its directory.
    func startSink(name: String = "sink (Hummingbird HTTP/2 over TLS, 200 at once, nothing stored)") async throws -> ServerUnderTest {
        let directory = try scratch("sink")
        return try await ServerUnderTest(name: name, executable: harnessPath, arguments: ["sink", "--directory", directory.path], directory: directory)
    }
}

/// A thousands-separated whole number.
func grouped(_ value: Double) -> String {
    let formatter = NumberFormatter()
    formatter.numberStyle = .decimal
    formatter.maximumFractionDigits = 0
    return formatter.string(from: NSNumber(value: value)) ?? "\(Int(value))"
}
