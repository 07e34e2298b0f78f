import ArgumentParser
import Crypto
import Foundation
import IsletTestSupport
import NIOCore
import NIOHTTP1

/// `islet-bench delivery`: from a change committed on Islet A to Apple's 200 for it — A is the
/// backend, sending through its outbox over HTTP/2 to Islet B's APNs endpoint, which plays
/// Apple (strict: a 200 there was applied). Updates go to A's REST API on an open-loop schedule
/// spread over every phone; the latency of each is read from A's own delivery log: the time its
/// delivery was queued (the change's commit) to the time Apple's 200 was written down.
struct DeliveryLatency: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delivery", abstract: "Commit to APNs 200: Islet A delivering updates to Islet B's APNs endpoint, p50/p99."
    )

    @OptionGroup var systems: Systems

    @Option(help: "Phones: activities on A, each on a device of its own with an update token of B's.")
    var phones = 1000

    @Option(help: "Devices on A the activities are spread over, round-robin (default: one per activity): --devices 1 puts every activity of the app on one phone, sharing its budget.")
    var devices: Int?

    @Option(help: "Updates per second, over all the phones (each phone gets rate / phones a second).")
    var rate = 1000.0

    @Option(help: "Seconds measured, after the warm-up.")
    var seconds = 20.0

    @Option(help: "Seconds of warm-up, not measured.")
    var warmUp = 5.0

    @Option(help: "Connections sending the updates to A.")
    var connections = 16

    @OptionGroup var store: StoreChoice

    @Flag(help: "Apple is a sink that answers 200 at once (islet-bench sink) instead of Islet B: A's sending alone, against the ceiling `apns` measures.")
    var sink = false

    @Flag(help: "A on a new database of a PostgreSQL server the harness starts (Debian's postgresql), not SQLite; A's CPU then leaves out PostgreSQL's.")
    var postgres = false

    @Flag(help: "A third into the measured time, rotate the app's key (docs/delivery.md, \"Key sets\"): B learns a second key, A adds it and removes the first, and a second later B revokes the first.")
    var rotate = false

    @Option(help: "A's priority-10 budget per app and phone an hour (lifecycle.pushBudgetPerHour, at most 10,000; Apple's is 12): a large one keeps a phone's updates at priority 10, the path where the budget is planned and spent per delivery.")
    var budget: Int?

    private static let bundleId = "com.bench.delivery"

    func run() async throws {
        if let devices, !(1...phones).contains(devices) { throw ValidationError("--devices is between 1 and --phones (\(phones)).") }
        if rotate && sink { throw ValidationError("--rotate needs B playing Apple (no --sink): a sink takes any key.") }
        if let budget, !(0...10_000).contains(budget) { throw ValidationError("--budget is between 0 and 10,000 (lifecycle.pushBudgetPerHour).") }
        var environment = postgres
            ? ["ISLET_STORE": try await PostgresServer.newDatabase(), "ISLET_SERVER_ADMIN_KEY": IsletClusterTarget.adminKey] : [:]
        // A plans the budget, B (the phones) counts it: both by the same rule.
        let budgeted = budget.map { ["ISLET_LIFECYCLE_PUSH_BUDGET_PER_HOUR": "\($0)"] } ?? [:]
        environment.merge(budgeted) { $1 }
        let loop = try await DeliveryBackend.start(
            systems: systems, store: store, phones: phones, devices: devices ?? phones, sink: sink, bundleId: Self.bundleId,
            environment: environment, appleEnvironment: budgeted
        )
        let (apple, backend, ids, auth) = (loop.apple, loop.backend, loop.ids, loop.auth)
        defer { apple.stop() }
        defer { backend.stop() }
        print(
            "delivery: \(grouped(Double(phones))) \(devices.map { "activities on \($0) phone\($0 == 1 ? "" : "s")" } ?? "phones") on A (\(backend.name), \(postgres ? "on PostgreSQL" : "durability \(store.durability)")), each activity's update token"
                + (sink ? " a token for \(apple.name)" : " one of B's (\(apple.name), strict pushes: a 200 was applied)") + "; \(grouped(rate)) updates/s over \(connections) connections"
                + " for \(Int(warmUp)) s warm-up + \(Int(seconds)) s measured; latency = A's delivery log, queued (the commit) to Apple's 200 recorded"
        )

        // The open-loop schedule: phone j's k-th update at base + (k + j / phones) × period.
        let period = Double(phones) / rate
        let clock = ContinuousClock()
        let base = clock.now.advanced(by: .milliseconds(200))
        let measuredFrom = Date().addingTimeInterval(0.2 + warmUp)
        let end = base.advanced(by: .seconds(warmUp + seconds))
        let cpuA = Box<CPUMeter?>(nil), cpuB = Box<CPUMeter?>(nil)
        let roundsAtStart = Box((rounds: 0.0, requests: 0.0))
        let (sent, refused, late) = try await withThrowingTaskGroup(of: (Int, Int, Double).self) { group in
            for lane in 0..<connections {
                group.addTask {
                    let connection = try await HTTPConnection.connect(port: backend.port)
                    let mine = Array(stride(from: lane, to: phones, by: connections))
                    var (sent, refused, late) = (0, 0, 0.0)
                    var round = 0
                    while true {
                        for phone in mine {
                            let due = base.advanced(by: .seconds((Double(round) + Double(phone) / Double(phones)) * period))
                            if due >= end { await connection.close(); return (sent, refused, late) }
                            if clock.now < due { try await Task.sleep(until: due, clock: clock) }
                            late = max(late, (clock.now - due) / .seconds(1))
                            let body = #"{"content":{"state":{"speed":\#(round % 60),"seq":\#(round)}}}"#
                            let (status, _) = try await connection.send(
                                .POST, "/v1/activities/\(ids[phone])/update", headers: auth, body: ByteBuffer(string: body)
                            )
                            if status == 200 { sent += 1 } else { refused += 1 }
                        }
                        round += 1
                    }
                }
            }
            if rotate {
                group.addTask {
                    try await Task.sleep(until: base.advanced(by: .seconds(warmUp + seconds / 3)), clock: clock)
                    try await Self.rotate(loop, bundleId: Self.bundleId, from: measuredFrom)
                    return (0, 0, 0)
                }
            }
            try await Task.sleep(until: base.advanced(by: .seconds(warmUp)), clock: clock)
            cpuA.value = CPUMeter(backend)
            cpuB.value = CPUMeter(apple)
            roundsAtStart.value = try await Self.senderCounters(port: backend.port, auth: auth)
            return try await group.reduce(into: (0, 0, 0.0)) { $0 = ($0.0 + $1.0, $0.1 + $1.1, max($0.2, $1.2)) }
        }
        let (useA, useB) = (cpuA.value!.use(), cpuB.value!.use())
        let roundsAtEnd = try await Self.senderCounters(port: backend.port, auth: auth)
        let rounds = roundsAtEnd.rounds - roundsAtStart.value.rounds
        let requests = roundsAtEnd.requests - roundsAtStart.value.requests
        let achieved = Double(sent + refused) / ((clock.now - base) / .seconds(1))

        // Wait for the outbox to empty, then read every phone's delivery log.
        let reader = try await HTTPConnection.connect(port: backend.port)
        let drained = Date().addingTimeInterval(60)
        while Date() < drained {
            let (_, health) = try await reader.send(.GET, "/healthz")
            let json = try JSONSerialization.jsonObject(with: Data(health.readableBytesView)) as? [String: Any]
            if ((json?["delivery"] as? [String: Any])?["outbox"] as? Int) == 0 { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        await reader.close()
        let logs = try await IsletSetup.inLanes(phones, port: backend.port) { connection, index -> [LogLine] in
            // Every page of the log: an activity updated many times a second has more lines than one holds.
            var lines: [[String: Any]] = []
            var cursor: String?
            repeat {
                let path = "/v1/activities/\(ids[index])/deliveries?limit=1000" + (cursor.map { "&cursor=\($0)" } ?? "")
                let (status, body) = try await connection.send(.GET, path, headers: auth)
                guard status == 200, let json = try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any],
                    let page = json["deliveries"] as? [[String: Any]]
                else { throw HarnessError("reading a delivery log: \(status)") }
                lines += page
                cursor = json["next"] as? String
            } while cursor != nil
            return lines.compactMap { line in
                guard let id = line["delivery"] as? Int, let time = line["time"] as? Double, let outcome = line["outcome"] as? String,
                    let event = line["event"] as? String
                else { return nil }
                return LogLine(delivery: id, time: time, event: event, outcome: outcome, status: line["status"] as? Int, priority: line["priority"] as? Int)
            }
        }
        var queued: [Int: Double] = [:]
        var latencies: [UInt64] = []
        var outcomes: [String: Int] = [:]
        // Deliveries answered 200 within the measured window, whatever their commit's time: A's rate of sending.
        let window = measuredFrom.timeIntervalSince1970...(measuredFrom.timeIntervalSince1970 + seconds)
        var deliveredInWindow = 0
        var atPriority10 = 0
        // Over the whole run, measured or not: what a rotation must not cause.
        let troubled = logs.joined().filter { $0.status == 403 || ["retrying", "held", "failed"].contains($0.outcome) }
        if rotate {
            let kinds = Dictionary(grouping: troubled) { "\($0.outcome)\($0.status.map { " \($0)" } ?? "")" }.mapValues(\.count)
            print("rotation: over the whole run, \(troubled.count) delivery log lines retrying, held, failed or answered 403\(kinds.isEmpty ? "" : ": \(kinds)")")
        }
        for line in logs.joined() where line.event == "update" {
            if line.outcome == "delivered", line.status == 200, window.contains(line.time) {
                deliveredInWindow += 1
                if line.priority == 10 { atPriority10 += 1 }
            }
            if line.outcome == "queued" {
                queued[line.delivery] = line.time
                continue
            }
            guard let committed = queued[line.delivery], committed >= measuredFrom.timeIntervalSince1970 else { continue }
            outcomes[line.outcome, default: 0] += 1
            if line.outcome == "delivered", line.status == 200 {
                latencies.append(UInt64(max(0, line.time - committed) * 1e9))
            }
        }
        latencies.sort()
        let others = outcomes.filter { $0.key != "delivered" }.sorted { $0.key < $1.key }.map { "\($0.key) \(grouped(Double($0.value)))" }
        print(
            "delivery \(grouped(Double(sent))) updates acknowledged (\(refused) refused; \(grouped(achieved)) updates/s achieved, the sender at most"
                + " \(String(format: "%.0f", late * 1000)) ms behind schedule),"
                + " \(grouped(Double(latencies.count))) measured ones delivered with 200"
                + (others.isEmpty ? "" : " (also: \(others.joined(separator: ", ")))")
                + ": commit → APNs 200 \(percentiles([0.5, 0.99], of: latencies)), max \(String(format: "%.2f", percentile(1, of: latencies))) ms;"
                + " \(grouped(Double(deliveredInWindow) / seconds)) deliveries/s answered 200 while measured"
                + " (\(deliveredInWindow > 0 ? 100 * atPriority10 / deliveredInWindow : 0)% at priority 10);"
                + " store transactions per delivery \(requests > 0 ? String(format: "%.3f", rounds / requests) : "-")"
                + " (the sender's rounds \(grouped(rounds)) / its requests \(grouped(requests)), islet_delivery_rounds_total);"
                + " A \(useA.text.replacingOccurrences(of: "server ", with: "")), \(sink ? "sink" : "B") CPU \(Int(useB.server * 100))%"
        )
    }
}

extension DeliveryLatency {
    /// A key rotation while updates flow: B ("Apple") learns a second key, A adds it to the
    /// app's set (it signs from then on) and removes the first, and a second later B revokes the
    /// first. Prints when each step was done, in seconds of the measured time.
    static func rotate(_ loop: DeliveryBackend, bundleId: String, from measuredFrom: Date) async throws {
        let newKey = P256.Signing.PrivateKey().pemRepresentation
        let (teamId, oldKeyId, newKeyId) = (loop.provider.teamId, loop.provider.keyId, "BENCHKEY02")
        let onB = try await HTTPConnection.connect(port: loop.apple.port)
        let onA = try await HTTPConnection.connect(port: loop.backend.port)
        let (bAuth, aAdmin) = ([("Authorization", "Bearer \(loop.provider.appKey)")], [("Authorization", "Bearer \(try loop.backend.adminKey)")])
        func step(_ what: String, _ connection: HTTPConnection, _ method: HTTPMethod, _ uri: String, _ headers: [(String, String)], _ body: [String: Any]?, expect: Int) async throws {
            let data = try body.map { ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: $0)) }
            let (status, answer) = try await connection.send(method, uri, headers: headers, body: data)
            guard status == expect else { throw HarnessError("\(what): \(status) \(String(buffer: answer))") }
            print("rotation: \(what) at \(String(format: "%.2f", Date().timeIntervalSince(measuredFrom))) s")
        }
        try await step("B learns \(newKeyId)", onB, .POST, "/v1/apps/\(bundleId)/keys", bAuth, ["keyId": newKeyId, "teamId": teamId, "privateKey": newKey], expect: 201)
        try await step(
            "A adds \(newKeyId)", onA, .POST, "/v1/apps/\(bundleId)/delivery/keys", aAdmin,
            ["keyId": newKeyId, "teamId": teamId, "privateKey": newKey, "environment": "development"], expect: 201
        )
        try await step("A removes \(oldKeyId)", onA, .DELETE, "/v1/apps/\(bundleId)/delivery/keys/\(oldKeyId)?environment=development", aAdmin, nil, expect: 204)
        try await Task.sleep(for: .seconds(1))
        try await step("B revokes \(oldKeyId)", onB, .DELETE, "/v1/apps/\(bundleId)/keys/\(oldKeyId)", bAuth, nil, expect: 204)
        await onA.close()
        await onB.close()
    }

    /// The sender's rounds (one store transaction each) and requests so far, from A's `/metrics`
    /// (a build without the rounds counter reads 0 for it).
    static func senderCounters(port: Int, auth: [(String, String)]) async throws -> (rounds: Double, requests: Double) {
        let connection = try await HTTPConnection.connect(port: port)
        defer { Task { await connection.close() } }
        let (_, body) = try await connection.send(.GET, "/metrics", headers: auth)
        var (rounds, requests) = (0.0, 0.0)
        for line in String(buffer: body).split(separator: "\n") where !line.hasPrefix("#") {
            guard let value = line.split(separator: " ").last.flatMap({ Double($0) }) else { continue }
            if line.hasPrefix("islet_delivery_rounds_total") { rounds += value }
            if line.hasPrefix("islet_delivery_requests_total") { requests += value }
        }
        return (rounds, requests)
    }
}

/// One line of a delivery log, as the benchmark reads it.
struct LogLine: Sendable {
    var delivery: Int
    var time: Double
    var event: String
    var outcome: String
    var status: Int?
    var priority: Int?
}

/// A value set by one task and read after it is done.
final class Box<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}
