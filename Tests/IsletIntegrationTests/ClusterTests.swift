import AsyncHTTPClient
import Crypto
import Foundation
import IsletAPNs
import IsletClient
import IsletCore
import IsletTestSupport
import NIOSSL
import Synchronization
import Testing

/// Several `islet serve` processes on one PostgreSQL database (docs/cluster.md), as issue 18's
/// "done when" says: one order of events everywhere, limits that hold under races, a node
/// killed under load, the database stopped under load.
@Suite(
    "Several nodes on PostgreSQL", .serialized,
    .enabled(if: PostgresServer.available, "needs PostgreSQL (apt-get install postgresql; .ci/run installs it)")
, .hangDetector)
struct ClusterTests {
    static let adminKey = "islet-cluster-test-admin-key-0001"

    /// Nodes on one database, each with a data directory of its own.
    struct Cluster {
        let data: [DataDirectory]
        var nodes: [ServerProcess]

        init(_ count: Int, database: String, environment: [String: String] = [:]) async throws {
            data = (0..<count).map { _ in DataDirectory() }
            var nodes: [ServerProcess] = []
            for directory in data {
                nodes.append(try await ServerProcess(data: directory, environment: environment.merging([
                    "ISLET_STORE": database, "ISLET_SERVER_ADMIN_KEY": ClusterTests.adminKey, "ISLET_APNS_ENABLED": "false",
                ]) { mine, _ in mine }))
            }
            self.nodes = nodes
        }

        func client(_ node: Int, key: String, http: HTTPClient) -> IsletClient {
            IsletClient(server: nodes[node].url, key: key, http: http)
        }

        /// Stops every node with SIGTERM: each must exit by itself, with status 0 (a node whose
        /// shutdown hangs is killed after 30 s, status 9).
        func stop() async {
            for node in nodes where node.isRunning {
                let status = await node.stop(signal: SIGTERM)
                #expect(status == 0, "a node's shutdown did not end by itself: \(node.output.suffix(2_000))")
            }
        }

        /// What the nodes logged at error level.
        var errors: [String] {
            nodes.flatMap { node in node.output.split(separator: "\n").filter { $0.contains(" error ") }.map(String.init) }
        }
    }

    /// A subscriber on each node from the first event: every node shows every event once, in one
    /// order; 50 starts racing on three nodes for one device never pass its limit.
    @Test func threeNodesShowOneOrderAndLimitsHoldUnderRaces() async throws {
        try await withHTTPClient { http in
            let database = try await PostgresServer.newDatabase()
            let cluster = try await Cluster(3, database: database, environment: [
                "ISLET_LIFECYCLE_MAX_ACTIVITIES_PER_DEVICE": "5", "ISLET_LIFECYCLE_MAX_ACTIVITIES_PER_APP": "1000",
            ])
            defer { print(cluster.errors.joined(separator: "\n")) }
            let admin = cluster.client(0, key: Self.adminKey, http: http)
            let app = try await admin.createApp(bundleId: "com.example.rides")
            let clients = (0..<3).map { cluster.client($0, key: app.apiKey, http: http) }
            // Every node says it shares one database.
            for node in cluster.nodes {
                let health = try await health(node, http: http).body
                // The address as given, with the sslmode it connects with (the default, prefer).
                let given = database.replacingOccurrences(of: "?connect_timeout=60", with: "")
                // And what a failover would keep: the test's server has no standby (docs/cluster.md §7).
                #expect(health["store"] == [
                    "kind": "postgresql", "location": .string(given + "?sslmode=prefer&connect_timeout=60"), "shared": true,
                    "replication": ["mode": "asynchronous", "synchronousCommit": "on", "synchronousStandbyNames": ""],
                ], "\(health)")
            }
            let received = (0..<3).map { _ in Received() }
            let readers = try await Array(0..<3).asyncMap { node in
                let stream = try await clients[node].events(.init(since: 0, coalesce: false))
                return Task { do { for try await event in stream { received[node].append(event) } } catch {} }
            }

            // Starts, updates and ends, spread over the nodes and made at once.
            let activities = try await withThrowingTaskGroup(of: ActivityID.self) { group in
                for index in 0..<4 {
                    group.addTask {
                        let client = clients[index % 3]
                        let id = try await client.start(ride(index)).id
                        for step in 1...6 {
                            _ = try await clients[(index + step) % 3].update(id, ContentUpdate(content: ActivityContent(state: ["step": .integer(Int64(step))])))
                        }
                        _ = try await clients[(index + 1) % 3].end(id)
                        return id
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(activities.count == 4)

            // 50 starts for one device, racing on the three nodes: exactly its limit succeed.
            _ = try await admin.createDevice(id: "racer")
            let started = try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<50 {
                    group.addTask {
                        do {
                            _ = try await clients[index % 3].start(ride(index, device: "racer"))
                            return true
                        } catch ClientError.refused(_, let error) where error.reason == .globalMaximumExceeded {
                            return false
                        }
                    }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(started == 5)
            let live = try await clients[1].activities(ActivityFilter(deviceId: "racer", states: [.active, .pending, .stale]))
            #expect(live.count == 5)

            // Every node's subscriber has every stored event, once, in the stored order.
            let last = try await storedLastEventID(clients[2])
            let stored = try await readStream(clients[0].events(.init(since: 0, coalesce: false)), through: last)
            #expect(stored.count == 4 * 8 + 5, "4 × (start, 6 updates, end) and 5 starts")
            try await within(30) {
                while received.contains(where: { ($0.lastID ?? 0) < last }) { try await Task.sleep(for: .milliseconds(20)) }
            }
            for (node, events) in received.enumerated() {
                #expect(events.events.withLock { $0 } == stored, "node \(node)'s subscriber")
            }
            for reader in readers { reader.cancel() }
            await cluster.stop()
        }
    }

    /// kill -9 of one node while three take updates: every acknowledged update is stored, the
    /// others go on, and the deadlines the dead node set fire once, on the others.
    @Test func aNodeKilledUnderLoadLosesNothingAndItsDeadlinesFireOnce() async throws {
        try await withHTTPClient { http in
            var cluster = try await Cluster(3, database: try await PostgresServer.newDatabase(), environment: [
                "ISLET_LIFECYCLE_MAX_ACTIVITIES_PER_DEVICE": "100", "ISLET_LIFECYCLE_MAX_ACTIVITIES_PER_APP": "1000",
            ])
            let admin = cluster.client(0, key: Self.adminKey, http: http)
            let app = try await admin.createApp(bundleId: "com.example.rides")
            let clients = (0..<3).map { cluster.client($0, key: app.apiKey, http: http) }
            var activities: [ActivityID] = []
            for index in 0..<6 { activities.append(try await clients[index % 3].start(ride(index)).id) }
            // Activities the node about to die starts, stale in three seconds.
            var staling: [ActivityID] = []
            for index in 0..<4 {
                var request = ride(100 + index)
                request.content.staleDate = Date().addingTimeInterval(3)
                staling.append(try await clients[2].start(request).id)
            }

            let acknowledged = Acknowledgements()
            let writers = (0..<6).map { writer in
                Task { [activities] in
                    while !Task.isCancelled {
                        let seq = acknowledged.nextSequence()
                        let id = activities[Int(seq) % activities.count]
                        // Writers of the dead node stop at their first failure; the others go on.
                        do {
                            _ = try await clients[writer % 3].update(id, ContentUpdate(content: ActivityContent(state: ["seq": .integer(seq)])))
                            acknowledged.record(seq, for: id)
                        } catch {
                            if writer % 3 == 2 { return }
                        }
                    }
                }
            }
            while acknowledged.count < 150 { try await Task.sleep(for: .milliseconds(10)) }
            #expect(await cluster.nodes[2].stop(signal: SIGKILL) == SIGKILL)
            let atKill = acknowledged.count
            while acknowledged.count < atKill + 150 { try await Task.sleep(for: .milliseconds(10)) }
            for writer in writers { writer.cancel() }
            for writer in writers { await writer.value }

            let acked = acknowledged.byActivity.withLock { $0 }
            for id in activities {
                let missing = acked[id, default: []].subtracting(try await clients[0].appliedSequences(id))
                #expect(missing.isEmpty, "acknowledged but lost with the node: \(missing.sorted())")
            }

            // The dead node's deadlines: each activity goes stale once, on a node still alive.
            let stalingIds = staling
            try await within(20) {
                while true {
                    let states = try await stalingIds.asyncMap { try await clients[1].activity($0).state }
                    if states.allSatisfy({ $0 == .stale }) { break }
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            for id in staling {
                let history = try await clients[0].history(id)
                let staled = history.filter { $0.type == .stateChanged && $0.data["to"] == "stale" }
                #expect(staled.count == 1, "\(id) went stale \(staled.count) times")
            }
            cluster.nodes.removeLast()
            await cluster.stop()
        }
    }

    /// PostgreSQL stopped for ten seconds while two nodes take updates: they answer 503 with a
    /// reason meanwhile — never hang — report it on /healthz, and recover by themselves once it
    /// is back; nothing acknowledged is lost.
    @Test func theDatabaseStoppedUnderLoadMeans503ThenRecoveryWithNothingLost() async throws {
        // A server of its own: stopping the shared one would stop the other suites' tests.
        let server = try await PostgresServer.start()
        defer { server.stop() }
        try await withHTTPClient { http in
            // The first node's APNs endpoint too: a push it cannot store is Apple's 503, not a 500.
            let cluster = try await Cluster(2, database: try await server.newDatabase(connectTimeout: nil), environment: ["ISLET_APNS_ENABLED": "true"])
            defer { print(cluster.errors.prefix(40).joined(separator: "\n")) }
            let admin = cluster.client(0, key: Self.adminKey, http: http)
            let app = try await admin.createApp(bundleId: "com.example.rides")
            let clients = (0..<2).map { cluster.client($0, key: app.apiKey, http: http) }
            let id = try await clients[0].start(ride(0)).id
            let provider = P256.Signing.PrivateKey()
            _ = try await clients[0].addProviderKey(
                bundleId: "com.example.rides", keyId: "KEY1234567", teamId: "TEAM123456", publicKey: provider.publicKey.pemRepresentation
            )
            let pushed = try await clients[0].start(ActivityRequest(
                attributesType: "RideAttributes", attributes: ["rider": "pushed"], content: ActivityContent(state: ["seq": 0]), pushType: .token
            ))
            let jwt = try await ProviderTokenSigner(p8: provider.pemRepresentation, keyId: "KEY1234567", teamId: "TEAM123456").token()
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .file(cluster.data[0].url.appendingPathComponent("tls/ca.pem").path)
            let apnsHTTP = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
            defer { apnsHTTP.shutdown(queue: .global()) { _ in } }
            let apns = APNsClient(server: "https://localhost:\(cluster.nodes[0].apnsPort!)", http: apnsHTTP)

            let acknowledged = Acknowledgements()
            let outcomes = Outcomes()
            let writers = (0..<4).map { writer in
                Task {
                    while !Task.isCancelled {
                        let seq = acknowledged.nextSequence()
                        let began = ContinuousClock.now
                        do {
                            _ = try await clients[writer % 2].update(id, ContentUpdate(content: ActivityContent(state: ["seq": .integer(seq)])))
                            acknowledged.record(seq, for: id)
                        } catch ClientError.refused(let status, let error) {
                            outcomes.refusals.withLock { $0["\(status) \(error.reason.rawValue)", default: 0] += 1 }
                            try? await Task.sleep(for: .milliseconds(50))
                        } catch {
                            // Cancelled at the end of the test mid-request: not the server's answer.
                            if !Task.isCancelled { outcomes.refusals.withLock { $0["\(error)", default: 0] += 1 } }
                        }
                        let took = ContinuousClock.now - began
                        outcomes.slowest.withLock { $0 = max($0, took) }
                    }
                }
            }
            let pusher = Task {
                while !Task.isCancelled {
                    let payload = #"{"aps":{"event":"update","content-state":{"seq":\#(acknowledged.nextSequence())}}}"#
                    do {
                        let answer = try await apns.push(
                            token: pushed.pushToken!, topic: "com.example.rides", payload: Data(payload.utf8), providerToken: jwt,
                            extraHeaders: [("apns-priority", "5")]
                        )
                        if answer.status != 200 {
                            outcomes.refusals.withLock { $0["\(answer.status) \(answer.reason ?? "") (APNs)", default: 0] += 1 }
                            try? await Task.sleep(for: .milliseconds(50))
                        }
                    } catch {
                        if !Task.isCancelled { outcomes.refusals.withLock { $0["\(error) (APNs)", default: 0] += 1 } }
                    }
                }
            }
            while acknowledged.count < 100 { try await Task.sleep(for: .milliseconds(10)) }
            server.pause()
            let pausedAt = ContinuousClock.now
            // While it is down: /healthz says so.
            try await within(15) {
                while try await health(cluster.nodes[1], http: http).status != 503 { try await Task.sleep(for: .milliseconds(200)) }
            }
            let remaining = Duration.seconds(10) - (ContinuousClock.now - pausedAt)
            if remaining > .zero { try await Task.sleep(for: remaining) }
            let duringOutage = acknowledged.count
            try server.resume()
            let resumedAt = ContinuousClock.now
            // Back: both nodes take updates again without a restart.
            try await within(30) {
                while acknowledged.count < duringOutage + 100 { try await Task.sleep(for: .milliseconds(50)) }
            }
            try await within(15) {
                while try await health(cluster.nodes[0], http: http).status != 200 { try await Task.sleep(for: .milliseconds(200)) }
            }
            print("outage: \(resumedAt - pausedAt) down; recovered \(ContinuousClock.now - resumedAt) after PostgreSQL was back")
            for writer in writers { writer.cancel() }
            pusher.cancel()
            for writer in writers { await writer.value }
            await pusher.value

            let seen = outcomes.refusals.withLock { $0 }
            #expect(seen.keys.contains { $0.hasPrefix("503 unavailable") }, "refusals while down: \(seen)")
            #expect(seen.keys.contains { $0 == "503 ServiceUnavailable (APNs)" }, "pushes refused while down: \(seen)")
            // REST's 503 unavailable, APNs's 503 ServiceUnavailable (which providers retry): never a 500.
            #expect(
                seen.keys.allSatisfy { $0.hasPrefix("503 unavailable") || $0 == "503 ServiceUnavailable (APNs)" }, "only 503 while down: \(seen)"
            )
            #expect(outcomes.slowest.withLock { $0 } < .seconds(15), "a request waited \(outcomes.slowest.withLock { $0 })")
            let missing = acknowledged.byActivity.withLock { $0[id, default: []] }.subtracting(try await clients[1].appliedSequences(id))
            #expect(missing.isEmpty, "acknowledged but lost in the outage: \(missing.sorted())")
            await cluster.stop()
        }
    }

    /// Issue 27: `Examples/cluster/run.sh` bound 8080 and 8081, which the README's earlier
    /// sections leave running (the tour's server and "Apple"), and built islet each time. It takes
    /// free ports beside them, and runs the binary it is given.
    @Test(.enabled(
        if: FileManager.default.isExecutableFile(atPath: "/usr/sbin/nginx") || ProcessInfo.processInfo.environment["ISLET_REQUIRE_NGINX"] != nil,
        "needs nginx (apt-get install nginx-light; .ci/run installs it)"
    ))
    func theClusterExampleRunsBesideTheServersTheREADMELeavesRunning() async throws {
        // The tour's server and "Apple", where nothing else holds their ports already.
        var running: [ServerProcess] = []
        for port in [8080, 8081] where (try? RawSocket(port: port)) == nil {
            running.append(try await ServerProcess(data: DataDirectory(), port: port))
        }
        let data = DataDirectory()
        let work = data.url.appendingPathComponent("cluster")
        // Given ISLET, the script must not build: a `swift` that fails comes first on its PATH.
        let bin = data.url.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        try "#!/bin/sh\necho 'swift must not run' >&2\nexit 99\n".write(to: bin.appendingPathComponent("swift"), atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: bin.appendingPathComponent("swift").path)
        let script = try await ChildProcess(
            URL(fileURLWithPath: "/bin/bash"),
            [URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Examples/cluster/run.sh").standardized.path],
            environment: [
                "ISLET": isletBinary.path, "DATA": work.path, "NODES": "2",
                "PATH": bin.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"),
            ]
        )
        let output = { script.output }
        defer { if script.termination == nil { kill(script.pid, SIGTERM) } }

        // Once every node is up, it writes nginx's address.
        let urlFile = work.appendingPathComponent("url")
        let url = try await within(120) { [script] in
            while true {
                if let url = try? String(contentsOf: urlFile, encoding: .utf8) { return url.trimmingCharacters(in: .whitespacesAndNewlines) }
                guard script.termination == nil else { return "" }
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        #expect(url.hasPrefix("http://127.0.0.1:") && !["8080", "8081"].contains(url.split(separator: ":").last.map(String.init)), "\(url)\n\(output())")
        try await withHTTPClient { http in
            let health = try await health(at: url, http: http)
            #expect(health.status == 200 && health.body["store"]?["kind"] == "postgresql", "\(health)\n\(output())")
            let adminKey = try String(contentsOf: work.appendingPathComponent("admin.key"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            _ = try await IsletClient(server: url, key: adminKey, http: http).createApp(bundleId: "com.example.ci")
            // Issue 27, the README walked: behind the script's nginx every request arrives from
            // loopback, and a request with no key listed every app and read the console's figures
            // — the keyless rights of this machine, handed to whoever reaches nginx. The nodes run
            // with server.keylessLoopback off, as the README says a server behind a proxy must.
            for path in ["/v1/apps", "/v1/overview", "/v1/devices/default/display"] {
                let keyless = try await http.execute(HTTPClientRequest(url: url + path), timeout: .seconds(10))
                #expect(keyless.status.code == 401, "\(path): \(keyless.status)")
            }
        }
        // Ctrl-C or SIGTERM stops it all.
        let ending = await script.stop(SIGTERM, orKillAfter: 60)
        #expect(ending == .exited(0), "\(ending): \(output())")
        #expect(!output().contains("swift must not run"))
        for server in running { await server.stop(signal: SIGTERM) }
    }
}

/// What requests met, from several writers.
private final class Outcomes: Sendable {
    let refusals = Mutex<[String: Int]>([:])
    let slowest = Mutex<Duration>(.zero)
}

/// A ride on a device, numbered.
private func ride(_ index: Int, device: DeviceID = "default") -> ActivityRequest {
    ActivityRequest(
        attributesType: "RideAttributes", attributes: ["rider": .integer(Int64(index))], content: ActivityContent(state: ["step": 0]),
        deviceId: device
    )
}

/// What a node's `/healthz` answers.
private func health(_ node: ServerProcess, http: HTTPClient) async throws -> (status: UInt, body: JSONValue) {
    try await health(at: node.url, http: http)
}

/// What `/healthz` answers at a server's address (a node's, or a proxy's in front of nodes).
private func health(at server: String, http: HTTPClient) async throws -> (status: UInt, body: JSONValue) {
    let response = try await http.execute(HTTPClientRequest(url: server + "/healthz"), timeout: .seconds(10))
    let text = String(buffer: try await response.body.collect(upTo: 1 << 20))
    return (response.status.code, (try? WireFormat.decoder().decode(JSONValue.self, from: Data(text.utf8))) ?? .string(text))
}
