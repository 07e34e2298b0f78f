import ArgumentParser
import Foundation

/// A started system, ready for a workload: its activities exist, publishers and subscribers can
/// connect. Islet, the HTTP ceiling and each peer conform, so every workload is written once.
protocol Target: Sendable {
    var server: ServerUnderTest { get }
    /// The system and its durability setting, as every result line names it.
    var label: String { get }
    /// How a subscriber watches a device (SSE, a KV watch…), as latency lines name it.
    var subscription: String { get }
    /// One connection that updates activities, one update in flight.
    func publisher() async throws -> any Publisher
    /// A subscriber to every activity of `device`, recording latencies once told to.
    func subscribe(device: Int) async throws -> Subscription
    /// Returns once the server itself counts `count` subscribers (for transports whose handshake
    /// ends before the server registers the subscriber).
    func awaitSubscribers(_ count: Int) async throws
    /// CPU seconds the system has used: its server's, or every process it runs on (several
    /// Islet nodes and their PostgreSQL).
    var cpuSeconds: Double { get }
    /// The same CPU seconds by process group ("node 1", "postgres"…), in a fixed order, where the
    /// system runs on more than its server (results then say each part's share).
    var cpuParts: [(part: String, seconds: Double)] { get }
    /// Changes its store ran again because another transaction held what they lock, so far
    /// (`islet_store_changes_run_again_total`, every node's); `nil` where there is no such thing.
    func changesRunAgain() async throws -> Int?
    /// Stops the system and removes its scratch directories.
    func stop()
}

extension Target {
    func awaitSubscribers(_ count: Int) async throws {}
    func changesRunAgain() async throws -> Int? { nil }
    var cpuSeconds: Double { server.cpuSeconds }
    var cpuParts: [(part: String, seconds: Double)] { [("server", cpuSeconds)] }
    func stop() { server.stop() }

    /// `count` subscribers to the devices `device(i)`, at most 64 connecting at once.
    func subscribers(_ count: Int, device: @escaping @Sendable (Int) -> Int) async throws -> [Subscription] {
        let subscribers = try await withThrowingTaskGroup(of: Subscription.self) { group in
            var subscribers: [Subscription] = []
            for index in 0..<count {
                group.addTask { try await self.subscribe(device: device(index)) }
                if index >= 64 { subscribers.append(try await group.next()!) }
            }
            return try await group.reduce(into: subscribers) { $0.append($1) }
        }
        try await awaitSubscribers(count)
        return subscribers
    }

    /// `count` publishers, connected concurrently.
    func publishers(_ count: Int) async throws -> [any Publisher] {
        try await withThrowingTaskGroup(of: (any Publisher).self) { group in
            for _ in 0..<count { group.addTask { try await self.publisher() } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
    }
}

/// One producer's connection: sets an activity's content state and waits for the system's
/// acknowledgement (Islet's `200`, a JetStream ack, a `PUBACK`, Redis's replies).
protocol Publisher: Sendable {
    /// Returns whether the system accepted the update.
    /// - Parameters:
    ///   - activity: The activity's index in the fleet (its device follows from it).
    ///   - state: The content state, JSON: exactly the bytes every system stores.
    func update(_ activity: Int, state: String) async throws -> Bool
    func close() async
}

/// What a workload updates: activity `i` lives on device `i % devices`, the same on every system
/// (Islet's device `d<d>`, NATS key `d<d>.a<i>`, MQTT topic `d<d>/a<i>`, Redis channel `d<d>`).
struct Fleet: Sendable {
    var activities: Int
    var devices: Int

    func device(of activity: Int) -> Int { activity % devices }
}

/// The systems a workload can run against, as `--system` names them.
enum SystemName: String, CaseIterable, Sendable {
    case isletFull = "islet-full", isletNormal = "islet-normal", ceiling, nats, mosquitto, redis
    /// Islet on PostgreSQL (docs/cluster.md): one node, or two on one database; one node, or
    /// two, with 1 ms of round trip added between each node and the database (a database on
    /// another machine); the binary `--islet-before` names (the same run, before a change).
    case isletPostgres = "islet-postgres", isletPostgres2 = "islet-postgres-2", isletPostgres1ms = "islet-postgres-1ms"
    case isletPostgres2x1ms = "islet-postgres-2-1ms"
    case isletPostgresBefore = "islet-postgres-before", isletPostgres2Before = "islet-postgres-2-before"
    case isletPostgres1msBefore = "islet-postgres-1ms-before", isletPostgres2x1msBefore = "islet-postgres-2-1ms-before"
    case isletFullBefore = "islet-full-before", isletNormalBefore = "islet-normal-before"
    /// Islet with `server.hotRoutes` off: every request through its route, in a task (docs/engine.md §9.1).
    case isletFullRoute = "islet-full-route", isletNormalRoute = "islet-normal-route"

    /// Whether it has subscribers (the ceiling only answers updates).
    var hasSubscribers: Bool { self != .ceiling }

    /// Whether it runs on PostgreSQL: measured beside Islet on SQLite, not in the peers'
    /// comparison (`standard`).
    var isShared: Bool {
        [
            .isletPostgres, .isletPostgres2, .isletPostgres1ms, .isletPostgres2x1ms, .isletPostgresBefore, .isletPostgres2Before,
            .isletPostgres1msBefore, .isletPostgres2x1msBefore,
        ].contains(self)
    }

    /// Whether it runs the binary `--islet-before` names.
    var isBefore: Bool {
        [.isletPostgresBefore, .isletPostgres2Before, .isletPostgres1msBefore, .isletPostgres2x1msBefore, .isletFullBefore, .isletNormalBefore].contains(self)
    }

    /// The peers' comparison: Islet on SQLite, the ceiling and the peers.
    static var standard: String {
        allCases.filter { !$0.isShared && !$0.isBefore && ![.isletFullRoute, .isletNormalRoute].contains($0) }.map(\.rawValue).joined(separator: ",")
    }

    /// Starts the system on a fresh scratch directory and prepares `fleet` on it.
    func start(_ systems: Systems, fleet: Fleet, transport: Transport = .sse) async throws -> any Target {
        switch self {
        case .isletFull: try await IsletTarget.start(systems, durability: "full", fleet: fleet, transport: transport)
        case .isletNormal: try await IsletTarget.start(systems, durability: "normal", fleet: fleet, transport: transport)
        case .ceiling: try await IsletTarget.ceiling(systems, fleet: fleet)
        case .nats: try await PeerTarget<NATS>.start(systems, fleet: fleet)
        case .mosquitto: try await PeerTarget<MQTT>.start(systems, fleet: fleet)
        case .redis: try await PeerTarget<RESP>.start(systems, fleet: fleet)
        case .isletPostgres: try await IsletClusterTarget.start(systems, nodes: 1, fleet: fleet, transport: transport)
        case .isletPostgres2: try await IsletClusterTarget.start(systems, nodes: 2, fleet: fleet, transport: transport)
        case .isletPostgres1ms:
            try await IsletClusterTarget.start(systems, nodes: 1, fleet: fleet, transport: transport, latency: .microseconds(500))
        case .isletPostgres2x1ms:
            try await IsletClusterTarget.start(systems, nodes: 2, fleet: fleet, transport: transport, latency: .microseconds(500))
        case .isletPostgresBefore: try await IsletClusterTarget.start(try systems.before(), nodes: 1, fleet: fleet, transport: transport)
        case .isletPostgres1msBefore:
            try await IsletClusterTarget.start(try systems.before(), nodes: 1, fleet: fleet, transport: transport, latency: .microseconds(500))
        case .isletPostgres2x1msBefore:
            try await IsletClusterTarget.start(try systems.before(), nodes: 2, fleet: fleet, transport: transport, latency: .microseconds(500))
        case .isletPostgres2Before: try await IsletClusterTarget.start(try systems.before(), nodes: 2, fleet: fleet, transport: transport)
        case .isletFullBefore: try await IsletTarget.start(try systems.before(), durability: "full", fleet: fleet, transport: transport)
        case .isletNormalBefore: try await IsletTarget.start(try systems.before(), durability: "normal", fleet: fleet, transport: transport)
        case .isletFullRoute: try await IsletTarget.start(systems, durability: "full", fleet: fleet, transport: transport, hotRoutes: false)
        case .isletNormalRoute: try await IsletTarget.start(systems, durability: "normal", fleet: fleet, transport: transport, hotRoutes: false)
        }
    }

    /// Reads `--system`'s comma-separated list.
    static func list(_ text: String) throws -> [SystemName] {
        try text.split(separator: ",").map { name in
            guard let system = SystemName(rawValue: String(name)) else {
                throw ValidationError("Unknown system \(name); one of \(allCases.map(\.rawValue).joined(separator: ", ")).")
            }
            return system
        }
    }

    /// Every system that has subscribers, for `--system`'s default.
    static var subscribable: String { allCases.filter { $0.hasSubscribers && !$0.isShared && !$0.isBefore }.map(\.rawValue).joined(separator: ",") }
}

/// How Islet's subscribers connect.
enum Transport: String, ExpressibleByArgument, Sendable {
    case sse, ws
}
