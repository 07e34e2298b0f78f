import Foundation
import NIOCore
import NIOHTTP1

/// Islet (or the HTTP ceiling, which answers the same update requests) with a fleet's devices
/// and activities created: updates are `POST /v1/activities/{id}/update`, subscribers SSE or
/// WebSocket streams of a device's events.
struct IsletTarget: Target {
    let server: ServerUnderTest
    let label: String
    let key: String
    /// The fleet's activity ids, by index.
    let ids: [String]
    /// How subscribers connect; `nil` for the ceiling, which has none.
    let transport: Transport?

    var subscription: String { transport == .ws ? "WebSocket" : "SSE" }

    /// `islet serve` with the given store durability, an app, and the fleet.
    static func start(
        _ systems: Systems, durability: String, fleet: Fleet, transport: Transport, hotRoutes: Bool = true
    ) async throws -> IsletTarget {
        let server = try await systems.startIslet(durability: durability, environment: hotRoutes ? [:] : ["ISLET_SERVER_HOT_ROUTES": "false"])
        do {
            let admin = try server.adminKey
            let setup = try await HTTPConnection.connect(port: server.port)
            let key = try await IsletSetup.app(on: setup, admin: admin, bundleId: "com.bench")
            await setup.close()
            try await IsletSetup.devices(fleet.devices, port: server.port, admin: admin)
            let ids = try await IsletSetup.activities(fleet.activities, port: server.port, key: key) { "d\(fleet.device(of: $0))" }
            let label = "islet\(systems.tag) (SQLite WAL, synchronous=\(durability.uppercased())\(hotRoutes ? "" : ", every request through its route"))"
            return IsletTarget(server: server, label: label, key: key, ids: ids, transport: transport)
        } catch {
            server.stop()
            throw error
        }
    }

    /// Hummingbird's empty handler: the same requests, nothing stored.
    static func ceiling(_ systems: Systems, fleet: Fleet) async throws -> IsletTarget {
        let server = try await systems.startCeiling()
        let ids = (0..<fleet.activities).map { "activity-\($0)" }
        return IsletTarget(server: server, label: "hummingbird (empty handler, nothing stored)", key: "", ids: ids, transport: nil)
    }

    func publisher() async throws -> any Publisher {
        HTTPPublisher(connection: try await HTTPConnection.connect(port: server.port), key: key, ids: ids)
    }

    func subscribe(device: Int) async throws -> Subscription {
        let path = "?device=d\(device)&coalesce=false"
        switch transport {
        case .sse: return try await SSESubscriber.connect(port: server.port, path: "/v1/events" + path, key: key)
        case .ws: return try await WebSocketSubscriber.connect(port: server.port, path: "/v1/events/ws" + path, key: key)
        case nil: throw HarnessError("\(label) has no subscribers")
        }
    }

    /// A counter of `GET /metrics` as the node says it now; `nil` when it has no such counter
    /// (an earlier binary).
    func metric(_ name: String) async throws -> Double? {
        let connection = try await HTTPConnection.connect(port: server.port)
        defer { Task { await connection.close() } }
        let (_, body) = try await connection.send(.GET, "/metrics")
        let line = String(buffer: body).split(separator: "\n").first { $0.hasPrefix(name + " ") }
        return line.flatMap { Double($0.split(separator: " ").last ?? "") }
    }

    /// Polls `GET /metrics` until `islet_subscribers` reaches `count`.
    func awaitSubscribers(_ count: Int) async throws {
        try await Self.awaitSubscribers(count, port: server.port, label: label)
    }

    /// Polls the Islet on `port`'s `GET /metrics` until `islet_subscribers` reaches `count`.
    static func awaitSubscribers(_ count: Int, port: Int, label: String) async throws {
        let connection = try await HTTPConnection.connect(port: port)
        let deadline = ContinuousClock.now.advanced(by: .seconds(30))
        var counted = 0
        while counted < count, ContinuousClock.now < deadline {
            let (_, body) = try await connection.send(.GET, "/metrics")
            let line = String(buffer: body).split(separator: "\n").first { $0.hasPrefix("islet_subscribers ") }
            counted = line.flatMap { Double($0.split(separator: " ").last ?? "") }.map { Int($0) } ?? 0
            if counted < count { try await Task.sleep(for: .milliseconds(20)) }
        }
        await connection.close()
        guard counted >= count else {
            throw HarnessError("\(label): \(counted) of \(count) subscribers registered")
        }
    }
}

/// A keep-alive HTTP/1.1 connection updating activities the way a producer's backend would.
struct HTTPPublisher: Publisher {
    let connection: HTTPConnection
    let key: String
    let ids: [String]

    func update(_ activity: Int, state: String) async throws -> Bool {
        let (status, _) = try await connection.send(
            .POST, "/v1/activities/\(ids[activity])/update", headers: [("Authorization", "Bearer \(key)")],
            body: ByteBuffer(string: #"{"content":{"state":\#(state)}}"#)
        )
        return status == 200
    }

    func close() async { await connection.close() }
}
