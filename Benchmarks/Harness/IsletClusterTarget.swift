import Foundation
import IsletEngine
import IsletTestSupport
import Synchronization

/// Islet on PostgreSQL (docs/cluster.md): `nodes` `islet serve` processes on one new database
/// of a PostgreSQL server the harness starts (Debian's `postgresql`, in /tmp, stopped when the
/// harness ends). Publishers take the nodes in turn; subscribers connect to the last node, so
/// with two nodes half the updates reach their subscriber through the other node's commit.
struct IsletClusterTarget: Target {
    let nodes: [IsletTarget]
    let label: String
    /// The delaying proxy between the nodes and PostgreSQL, if there is one.
    var proxy: LatencyProxy?

    var server: ServerUnderTest { nodes[0].server }
    var subscription: String { nodes[0].subscription }
    private let turn = Turn()

    /// Every node shares it (nodes on one database must).
    static let adminKey = "islet-bench-cluster-admin-key-000001"

    /// - Parameter latency: Added to each direction between the nodes and PostgreSQL (a
    ///   `LatencyProxy`): half the round trip.
    static func start(
        _ systems: Systems, nodes count: Int, fleet: Fleet, transport: Transport, latency: Duration? = nil
    ) async throws -> IsletClusterTarget {
        var database = try await PostgresServer.newDatabase()
        var proxy: LatencyProxy?
        if let latency {
            let direct = try PostgresAddress(database)
            let started = try await LatencyProxy.start(to: direct.port, delay: latency)
            proxy = started
            database = database.replacingOccurrences(of: ":\(direct.port)/", with: ":\(started.port)/")
        }
        let pool = systems.poolSize(behindLatency: latency != nil)
        if let pool { database += "?pool_size=\(pool)" }
        var servers: [ServerUnderTest] = []
        do {
            for index in 0..<count {
                servers.append(try await systems.startIslet(
                    durability: "full", name: "islet (PostgreSQL, node \(index + 1))",
                    environment: ["ISLET_STORE": database, "ISLET_SERVER_ADMIN_KEY": adminKey]
                ))
            }
            let setup = try await HTTPConnection.connect(port: servers[0].port)
            let key = try await IsletSetup.app(on: setup, admin: adminKey, bundleId: "com.bench")
            await setup.close()
            try await IsletSetup.devices(fleet.devices, port: servers[0].port, admin: adminKey)
            let ids = try await IsletSetup.activities(fleet.activities, port: servers[0].port, key: key) { "d\(fleet.device(of: $0))" }
            let behind = latency.map { " behind \(Double($0.components.attoseconds) / 5e14) ms of round trip" } ?? ""
            let pooled = pool.map { ", pool_size=\($0)" } ?? ""
            let label = "islet\(systems.tag) (PostgreSQL 15\(behind), \(count) node\(count == 1 ? "" : "s")\(pooled))"
            return IsletClusterTarget(
                nodes: servers.map { IsletTarget(server: $0, label: label, key: key, ids: ids, transport: transport) }, label: label,
                proxy: proxy
            )
        } catch {
            for server in servers { server.stop() }
            proxy?.stop()
            throw error
        }
    }

    /// The next node's connection: publishers take the nodes in turn.
    func publisher() async throws -> any Publisher {
        try await nodes[turn.next(of: nodes.count)].publisher()
    }

    func subscribe(device: Int) async throws -> Subscription {
        try await nodes[nodes.count - 1].subscribe(device: device)
    }

    func awaitSubscribers(_ count: Int) async throws {
        try await nodes[nodes.count - 1].awaitSubscribers(count)
    }

    /// Every node's CPU and PostgreSQL's (its processes, all run by the `postgres` user): on one
    /// machine they share its cores.
    var cpuSeconds: Double {
        cpuParts.reduce(0) { $0 + $1.seconds }
    }

    var cpuParts: [(part: String, seconds: Double)] {
        nodes.indices.map { ("node \($0 + 1)", nodes[$0].server.cpuSeconds) }
            + [("postgres", ProcessCPU.seconds(ofUser: "postgres"))]
    }

    func changesRunAgain() async throws -> Int? {
        var total = 0.0
        for node in nodes {
            guard let count = try await node.metric("islet_store_changes_run_again_total") else { return nil }
            total += count
        }
        return Int(total)
    }

    func stop() {
        for node in nodes { node.server.stop() }
        proxy?.stop()
    }
}

/// Hands out 0, 1, … n-1, 0, … to concurrent callers.
private final class Turn: Sendable {
    private let count = Mutex(0)

    func next(of n: Int) -> Int {
        count.withLock { count in
            defer { count += 1 }
            return count % n
        }
    }
}

extension ProcessCPU {
    /// CPU seconds of every live process `user` runs (user + system).
    static func seconds(ofUser user: String) -> Double {
        guard let entry = getpwnam(user) else { return 0 }
        let uid = "\(entry.pointee.pw_uid)"
        let pids = (try? FileManager.default.contentsOfDirectory(atPath: "/proc"))?.compactMap(Int32.init) ?? []
        return pids.reduce(0) { total, pid in
            // "Uid:\treal\teffective\t…" in /proc/<pid>/status.
            let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
            let owner = status.split(separator: "\n").first { $0.hasPrefix("Uid:") }?.split(whereSeparator: \.isWhitespace).dropFirst().first
            return owner.map(String.init) == uid ? total + seconds(of: pid) : total
        }
    }
}
