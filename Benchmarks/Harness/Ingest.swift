import ArgumentParser
import Foundation
import NIOCore
import NIOHTTP1

/// `islet-bench ingest`: the highest rate of acknowledged updates, keep-alive HTTP clients.
struct Ingest: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Acknowledged updates per second over keep-alive HTTP/1.1.")

    @OptionGroup var systems: Systems

    @Option(help: "Keep-alive connections, one request in flight each.")
    var connections = 64

    @Option(help: "Activities updated round-robin.")
    var activities = 1000

    @Option(help: "Seconds measured (after a warm-up of a fifth of it).")
    var seconds = 10.0

    @Option(help: "Targets: islet-full, islet-normal, ceiling (comma-separated).")
    var targets = "ceiling,islet-full,islet-normal"

    func run() async throws {
        for target in targets.split(separator: ",") {
            for size in PayloadSize.allCases {
                let server: ServerUnderTest
                switch target {
                case "ceiling": server = try await systems.startCeiling()
                case "islet-full": server = try await systems.startIslet(durability: "full")
                case "islet-normal": server = try await systems.startIslet(durability: "normal")
                default: throw ValidationError("Unknown target \(target).")
                }
                defer { server.stop() }
                let result = try await measure(server, size: size, isIslet: target != "ceiling")
                print(result.line)
            }
        }
    }

    struct Result {
        var system: String
        var size: PayloadSize
        var rate: Double
        var failures: Int
        var serverCPU: Double
        var harnessCPU: Double

        var line: String {
            "ingest \(system) \(size.rawValue): \(grouped(rate)) updates/s"
                + " (server CPU \(Int(serverCPU * 100))%, harness CPU \(Int(harnessCPU * 100))%\(failures > 0 ? ", \(failures) failed" : ""))"
        }
    }

    func measure(_ server: ServerUnderTest, size: PayloadSize, isIslet: Bool) async throws -> Result {
        let setup = try await HTTPConnection.connect(host: "127.0.0.1", port: server.port)
        var key = ""
        var ids: [String] = (0..<activities).map { "activity-\($0)" }
        if isIslet {
            key = try await IsletSetup.app(on: setup, admin: try server.adminKey, bundleId: "com.bench.ingest")
            ids = try await IsletSetup.activities(activities, port: server.port, key: key)
        }
        await setup.close()

        let pool = try await HTTPConnection.pool(connections, port: server.port)
        let headers = [("Authorization", "Bearer \(key)")]
        let warmUp = seconds / 5
        let clock = ContinuousClock()
        let begin = clock.now
        let start = begin.advanced(by: .seconds(warmUp))
        let end = start.advanced(by: .seconds(seconds))
        let targets = ids
        var cpuAtStart = (0.0, 0.0)
        let counts = try await withThrowingTaskGroup(of: (Int, Int).self) { group in
            for (index, connection) in pool.enumerated() {
                group.addTask {
                    var done = 0, failed = 0, sequence = index
                    while true {
                        let now = clock.now
                        if now >= end { break }
                        sequence += pool.count
                        let id = targets[sequence % targets.count]
                        let body = ByteBuffer(string: size.update(sequence: sequence))
                        let (status, _) = try await connection.send(.POST, "/v1/activities/\(id)/update", headers: headers, body: body)
                        let finished = clock.now
                        guard finished >= start, finished < end else { continue }
                        if status == 200 { done += 1 } else { failed += 1 }
                    }
                    return (done, failed)
                }
            }
            try await Task.sleep(until: start, clock: clock)
            cpuAtStart = (server.cpuSeconds, ProcessCPU.seconds(of: getpid()))
            return try await group.reduce(into: (0, 0)) { $0.0 += $1.0; $0.1 += $1.1 }
        }
        let cpuAfter = (server.cpuSeconds, ProcessCPU.seconds(of: getpid()))
        for connection in pool { await connection.close() }
        return Result(
            system: server.name, size: size, rate: Double(counts.0) / seconds, failures: counts.1,
            serverCPU: (cpuAfter.0 - cpuAtStart.0) / seconds, harnessCPU: (cpuAfter.1 - cpuAtStart.1) / seconds
        )
    }
}

/// The two content states of the issue: tiny, and 2 KB.
enum PayloadSize: String, CaseIterable, Sendable {
    case tiny, twoKB = "2KB"

    private static let padding = String(repeating: "x", count: 2000)

    func state(sequence: Int) -> String {
        switch self {
        case .tiny: #"{"speed":27.4,"seq":\#(sequence)}"#
        case .twoKB: #"{"speed":27.4,"seq":\#(sequence),"note":"\#(Self.padding)"}"#
        }
    }

    func update(sequence: Int) -> String {
        #"{"content":{"state":\#(state(sequence: sequence))}}"#
    }
}

/// Creating what a measurement updates.
enum IsletSetup {
    /// Creates an app; returns its key.
    static func app(on connection: HTTPConnection, admin: String, bundleId: String) async throws -> String {
        let (status, body) = try await connection.send(
            .POST, "/v1/apps", headers: [("Authorization", "Bearer \(admin)")], body: ByteBuffer(string: #"{"bundleId":"\#(bundleId)"}"#)
        )
        guard status == 201, let json = try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any],
            let key = json["apiKey"] as? String
        else { throw HarnessError("creating the app: \(status) \(String(buffer: body))") }
        return key
    }

    /// Starts `count` activities over a few connections; returns their ids.
    static func activities(_ count: Int, port: Int, key: String, device: @escaping @Sendable (Int) -> String = { _ in "default" }) async throws -> [String] {
        try await inLanes(count, port: port) { connection, index in
            let body = #"{"attributesType":"Bench","attributes":{},"device":"\#(device(index))","content":{"state":{"speed":0,"seq":0}}}"#
            let (status, answer) = try await connection.send(
                .POST, "/v1/activities", headers: [("Authorization", "Bearer \(key)")], body: ByteBuffer(string: body)
            )
            guard status == 201, let json = try JSONSerialization.jsonObject(with: Data(answer.readableBytesView)) as? [String: Any],
                let id = json["id"] as? String
            else { throw HarnessError("starting an activity: \(status) \(String(buffer: answer))") }
            return id
        }
    }

    /// Creates devices `d0` … `d<count-1>`.
    static func devices(_ count: Int, port: Int, admin: String) async throws {
        _ = try await inLanes(count, port: port) { connection, index in
            let (status, answer) = try await connection.send(
                .POST, "/v1/devices", headers: [("Authorization", "Bearer \(admin)")], body: ByteBuffer(string: #"{"id":"d\#(index)"}"#)
            )
            guard status == 201 else { throw HarnessError("creating a device: \(status) \(String(buffer: answer))") }
        }
    }

    /// Runs `make` for indexes 0..<count over eight connections at once; the results in no set order.
    private static func inLanes<T: Sendable>(
        _ count: Int, port: Int, _ make: @escaping @Sendable (HTTPConnection, Int) async throws -> T
    ) async throws -> [T] {
        let lanes = 8
        return try await withThrowingTaskGroup(of: [T].self) { group in
            for lane in 0..<lanes {
                group.addTask {
                    let connection = try await HTTPConnection.connect(host: "127.0.0.1", port: port)
                    var made: [T] = []
                    for index in stride(from: lane, to: count, by: lanes) { made.append(try await make(connection, index)) }
                    await connection.close()
                    return made
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
    }
}
