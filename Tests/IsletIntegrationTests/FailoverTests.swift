import Foundation
import IsletClient
import IsletCore
import IsletTestSupport
import Synchronization
import Testing

/// docs/cluster.md §7: two nodes given a primary and its synchronous standby in one address
/// (`target_session_attrs=read-write`), four writers updating; the primary crashes
/// (`pg_ctl stop -m immediate`) and the standby is promoted (`pg_ctl promote`). Both nodes move
/// to it by themselves, and nothing acknowledged is lost.
@Suite("Following a promoted standby", .serialized, .hangDetector)
struct FailoverTests {
    @Test(.enabled(if: PostgresServer.available, "needs PostgreSQL (apt-get install postgresql; .ci/run installs it)"))
    func bothNodesWriteToThePromotedStandbyWithinTenSecondsAndNothingAcknowledgedIsLost() async throws {
        let lost = try await failover(synchronous: true)
        #expect(lost.isEmpty, "acknowledged but lost in the failover: \(lost)")
    }

    /// With an asynchronous standby the nodes move as well; what the standby had not received
    /// when the primary crashed is lost, and the test says how much (docs/cluster.md §7).
    @Test(.enabled(if: PostgresServer.available, "needs PostgreSQL (apt-get install postgresql; .ci/run installs it)"))
    func withAnAsynchronousStandbyTheNodesMoveAndTheTestCountsWhatWasLost() async throws {
        let lost = try await failover(synchronous: false)
        print("failover, asynchronous standby: \(lost.values.map(\.count).reduce(0, +)) acknowledged updates lost \(lost.mapValues(\.count))")
    }

    /// Deadlines that fall due while no host takes writes (the standby promoted late, as a
    /// managed service's failover takes seconds) run after the switch, once, on one of the nodes:
    /// a stale date, an ended activity's dismissal and a scheduled start.
    @Test(.enabled(if: PostgresServer.available, "needs PostgreSQL (apt-get install postgresql; .ci/run installs it)"))
    func deadlinesDueWhileNoHostTakesWritesRunOnceAfterTheSwitch() async throws {
        let lost = try await failover(synchronous: true, deadlinesDuringTheSwitch: true)
        #expect(lost.isEmpty, "acknowledged but lost in the failover: \(lost)")
    }

    /// The console's overview says what a failover keeps, as the database says it at each
    /// reading (Browser/console_store_test.py): synchronous on the primary with its synchronous
    /// standby; after the primary crashes and the standby is promoted, the same open page says
    /// asynchronous — the promoted standby has no standby of its own.
    @Test(.enabled(if: PostgresServer.available && browserAvailable, "needs PostgreSQL and a browser (.ci/run installs them)"))
    func theConsoleSaysWhatAFailoverKeepsBeforeAndAfterIt() async throws {
        let primary = try await PostgresServer.start()
        defer { primary.stop() }
        let name = PostgresServer.databaseName(of: try await primary.newDatabase())
        let standby = try await PostgresServer.standby(of: primary, synchronous: true)
        defer { standby.stop() }
        let data = DataDirectory()
        let node = try await ServerProcess(data: data, environment: [
            "ISLET_STORE": bothHosts(primary, standby, database: name),
            "ISLET_SERVER_ADMIN_KEY": ClusterTests.adminKey,
        ])
        let ready = FileManager.default.temporaryDirectory.appendingPathComponent("islet-console-store-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: ready) }
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Browser/console_store_test.py")
        let ended = Mutex(false)
        let browsing = Task {
            defer { ended.withLock { $0 = true } }
            return try await runPython(script, environment: [
                "ISLET_URL": node.url, "ISLET_ADMIN_KEY": ClusterTests.adminKey, "READY_FILE": ready.path, "PYTHONUNBUFFERED": "1",
            ].merging(ProcessInfo.processInfo.environment.filter { $0.key == "ISLET_SCREENSHOTS" }) { first, _ in first }, timeout: 180)
        }
        // Once the page has said synchronous: the failover, with the page open.
        let shown = try await eventually("the page shows the synchronous standby, or the script ends", within: 120) { () -> Bool? in
            if FileManager.default.fileExists(atPath: ready.path) { return true }
            return ended.withLock { $0 } ? false : nil
        }
        if shown {
            primary.crash()
            try standby.promote()
        }
        let (status, stdout, stderr) = try await browsing.value
        #expect(status == 0, "console_store_test.py failed:\n\(stdout)\(stderr)")
        #expect(stdout.split(separator: "\n").filter { $0.hasPrefix("ok: ") }.count == 2, "\(stdout)\(stderr)")
        #expect(node.output.contains("Moved to another PostgreSQL host"), "\(node.output.suffix(1_500))")
        await node.stop(signal: SIGTERM)
    }

    /// The failover: both nodes must write again within 10 s; returns the acknowledged updates
    /// the promoted standby does not have, by activity. With `deadlinesDuringTheSwitch`, the
    /// standby is promoted only once deadlines set before the crash have fallen due.
    func failover(synchronous: Bool, deadlinesDuringTheSwitch: Bool = false) async throws -> [ActivityID: [Int64]] {
        let primary = try await PostgresServer.start()
        defer { primary.stop() }
        let name = PostgresServer.databaseName(of: try await primary.newDatabase())
        // The standby replicates across a link of 5 ms each way (zones apart), cut as the primary
        // crashes: what was on its way to the standby is lost with the primary.
        let link = try await DelayedLink(to: primary.port, delay: .milliseconds(5))
        let standby = try await PostgresServer.standby(of: primary, synchronous: synchronous, replicatingThrough: link.port)
        defer { standby.stop() }
        let address = bothHosts(primary, standby, database: name)
        return try await withHTTPClient { http in
            let cluster = try await ClusterTests.Cluster(2, database: address, environment: ["ISLET_LIFECYCLE_MAX_ACTIVITIES_PER_APP": "50", "ISLET_LIFECYCLE_MAX_ACTIVITIES_PER_DEVICE": "50"])
            let admin = cluster.client(0, key: ClusterTests.adminKey, http: http)
            let app = try await admin.createApp(bundleId: "com.example.rides")
            let clients = (0..<2).map { cluster.client($0, key: app.apiKey, http: http) }
            // Each node says what a failover keeps.
            for client in clients {
                #expect(try await client.health()["store"]?["replication"]?["mode"] == .string(synchronous ? "synchronous" : "asynchronous"))
            }
            var started: [ActivityID] = []
            for rider in 0..<4 {
                started.append(try await clients[rider % 2].start(ActivityRequest(
                    attributesType: "RideAttributes", attributes: ["rider": .integer(Int64(rider))], content: ActivityContent(state: ["seq": 0])
                )).id)
            }
            let activities = started
            let acknowledged = Acknowledgements()
            // The last time each node acknowledged an update.
            let lastAcknowledged = LastAcknowledged()
            let writing = ContinuousClock.now
            let writers = (0..<4).map { writer in
                Task {
                    while !Task.isCancelled {
                        let seq = acknowledged.nextSequence()
                        let id = activities[writer]
                        do {
                            _ = try await clients[writer % 2].update(id, ContentUpdate(content: ActivityContent(state: ["seq": .integer(seq)])))
                            acknowledged.record(seq, for: id)
                            lastAcknowledged.times.withLock { $0[writer % 2] = .now }
                        } catch {
                            // 503 while the primary is gone: what a client sees, and tries again.
                            if !Task.isCancelled {
                                let answer = if case ClientError.refused(let status, let error) = error { "\(status) \(error.reason.rawValue)" } else { "\(error)" }
                                lastAcknowledged.refusals.withLock { $0[answer, default: 0] += 1 }
                            }
                            try? await Task.sleep(for: .milliseconds(50))
                        }
                    }
                }
            }
            _ = try await eventually("updates flow") { acknowledged.count >= 100 ? true : nil }

            let deadlines = deadlinesDuringTheSwitch ? try await DeadlinesDue.afterTheCrash(clients: clients) : nil
            // The standby is cut off first, then the primary dies: what the primary acknowledged
            // meanwhile, and what was on its way, the standby never receives.
            let cut = ContinuousClock.now
            await link.cut()
            primary.crash()
            // The switch's time runs from the crash (from the promotion when the test held it back).
            let crashed = ContinuousClock.now
            var failed = crashed
            let rate = Double(acknowledged.count) / (cut - writing).inSeconds
            if let deadlines {
                // The deadlines fall due while no host takes writes; only then the promotion.
                if Date() >= deadlines.due {
                    // A machine so busy that the crash took half the lead: the deadlines may have
                    // run on the old primary. The run still checks they ran once.
                    print("failover: the primary crashed after its deadlines were due; this run checks only that they ran once")
                }
                try await Task.sleep(for: .seconds(deadlines.due.timeIntervalSinceNow + 0.5))
                failed = .now
            }
            try standby.promote()
            // Both nodes acknowledge updates again, with no change to their configuration.
            let back = try await eventually("both nodes write again", within: 30) { () -> [Duration]? in
                let last = lastAcknowledged.times.withLock { $0 }
                guard let zero = last[0], let one = last[1], zero > failed, one > failed else { return nil }
                return [zero - failed, one - failed]
            }
            let atSwitch = acknowledged.count
            _ = try await eventually("updates flow on the new primary") { acknowledged.count >= atSwitch + 100 ? true : nil }
            for writer in writers { writer.cancel() }
            for writer in writers { await writer.value }
            print("failover (\(synchronous ? "synchronous" : "asynchronous")): \(Int(rate)) updates/s acknowledged before the crash, \(Int((crashed - cut).inSeconds * 1000)) ms from the cut to the crash; the nodes wrote again \(back.map(\.inSeconds)) s after \(deadlines == nil ? "it" : "the promotion")")
            for took in back {
                #expect(took < .seconds(10), "a node wrote again \(took) after the primary crashed")
            }
            // While the nodes moved, a change was refused with 503 and nothing else: never a 500.
            let refusals = lastAcknowledged.refusals.withLock { $0 }
            #expect(refusals.keys.allSatisfy { $0 == "503 unavailable" }, "\(refusals)\n\(cluster.errors.suffix(20).joined(separator: "\n"))")

            // What of the acknowledged updates the promoted standby has, as the nodes read it.
            let acked = acknowledged.byActivity.withLock { $0 }
            var lost: [ActivityID: [Int64]] = [:]
            for id in activities {
                let missing = acked[id, default: []].subtracting(try await clients[0].appliedSequences(id))
                if !missing.isEmpty { lost[id] = missing.sorted() }
            }
            if let deadlines { try await deadlines.expectEachRanOnce(reading: clients[0]) }
            // The promoted standby has no standby of its own: each node now says a failover
            // could lose the last commits.
            for client in clients {
                #expect(try await client.health()["store"]?["replication"]?["mode"] == "asynchronous")
            }
            let moved = cluster.nodes.map { $0.output.contains("Moved to another PostgreSQL host") }
            #expect(moved == [true, true], "\(cluster.nodes.map { $0.output.suffix(1_500) })")
            await cluster.stop()
            return lost
        }
    }
}

/// Activities whose deadlines fall due at one time: two stale dates, two ended activities'
/// dismissals and a scheduled start, set on both nodes.
private struct DeadlinesDue {
    let due: Date
    let staling: [ActivityID]
    let dismissing: [ActivityID]
    let starting: ActivityID

    /// Deadlines due a few seconds after they are set, and at least as long after the last of
    /// them is set as it took to set them: a busy machine gets a longer lead, so the crash that
    /// follows still comes before them.
    static func afterTheCrash(clients: [IsletClient]) async throws -> DeadlinesDue {
        var lead = 4.0
        while true {
            let set = try await DeadlinesDue(at: Date().addingTimeInterval(lead), clients: clients)
            if set.due.timeIntervalSinceNow > lead / 2 { return set }
            lead *= 2
            try #require(lead <= 32, "setting five activities took over 16 s")
        }
    }

    init(at due: Date, clients: [IsletClient]) async throws {
        self.due = due
        func ride(_ rider: Int, stale: Date? = nil, start: Date? = nil) -> ActivityRequest {
            var request = ActivityRequest(attributesType: "RideAttributes", attributes: ["rider": .integer(Int64(rider))], content: ActivityContent(state: ["seq": 0]))
            request.content.staleDate = stale
            request.start = start
            if start != nil { request.alert = Alert(title: "Your ride", body: "Starts now") }
            return request
        }
        staling = [try await clients[0].start(ride(10, stale: due)).id, try await clients[1].start(ride(11, stale: due)).id]
        var dismissing: [ActivityID] = []
        for rider in [12, 13] {
            let id = try await clients[rider % 2].start(ride(rider)).id
            _ = try await clients[rider % 2].end(id, EndRequest(dismissalPolicy: .after(due)))
            dismissing.append(id)
        }
        self.dismissing = dismissing
        starting = try await clients[0].start(ride(14, start: due)).id
    }

    /// Each deadline ran after the switch, once (two nodes share the work).
    func expectEachRanOnce(reading client: IsletClient) async throws {
        let expected: [(ActivityID, ActivityState, String)] =
            staling.map { ($0, .stale, "stale") } + dismissing.map { ($0, .dismissed, "dismissed") } + [(starting, .active, "active")]
        _ = try await eventually("the deadlines due in the switch ran", within: 20) { () -> Bool? in
            for (id, state, _) in expected where try await client.activity(id).state != state { return nil }
            return true
        }
        for (id, _, to) in expected {
            let moves = try await client.history(id).filter { $0.type == .stateChanged && $0.data["to"] == .string(to) }
            #expect(moves.count == 1, "\(id) moved to \(to) \(moves.count) times")
        }
    }
}

/// The address a node is given: the primary and its standby, the writable one to be kept, as
/// libpq writes it (docs/cluster.md §7).
private func bothHosts(_ primary: PostgresServer, _ standby: PostgresServer, database name: String) -> String {
    "postgres://islet@127.0.0.1:\(primary.port),127.0.0.1:\(standby.port)/\(name)?connect_timeout=5&target_session_attrs=read-write"
}

extension Duration {
    fileprivate var inSeconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

/// When each node last acknowledged an update, by node.
private final class LastAcknowledged: Sendable {
    let times = Mutex<[Int: ContinuousClock.Instant]>([:])
    /// What the writers were answered when not acknowledged, and how often.
    let refusals = Mutex<[String: Int]>([:])
}

extension DeliveryLoopTests {
    /// docs/cluster.md §7 with phones: two A nodes on a primary and its synchronous standby
    /// deliver to B (playing Apple and the phone), the updates given to each in turn; the
    /// primary crashes and the standby is promoted between updates. Every activity's latest
    /// state reaches its phone once, in order — what was claimed on the old primary and not
    /// recorded is sent again after its lease, by one node.
    @Test(.enabled(if: PostgresServer.available, "needs PostgreSQL (apt-get install postgresql; .ci/run installs it)"))
    func everyActivitysLatestStateReachesItsPhoneInOrderAcrossAFailover() async throws {
        let primary = try await PostgresServer.start()
        defer { primary.stop() }
        let name = PostgresServer.databaseName(of: try await primary.newDatabase())
        let standby = try await PostgresServer.standby(of: primary, synchronous: true)
        defer { standby.stop() }
        let address = bothHosts(primary, standby, database: name)
        try await withLoop(a: ["ISLET_STORE": address, "ISLET_SERVER_ADMIN_KEY": "islet-failover-admin-key-000000001", "ISLET_DELIVERY_LEASE": "6s"]) { loop in
            // A second node on the same database: both send from the one outbox.
            let second = try await ServerProcess(data: DataDirectory(), environment: loop.aEnvironment)
            let nodes = [loop.appOnA, IsletClient(server: second.url, key: loop.keyOnA, http: loop.http)]
            func update(_ id: ActivityID, _ step: Int) async throws {
                _ = try await nodes[step % 2].update(id, ContentUpdate(content: ActivityContent(state: ["status": .string("step \(step)")])))
            }
            var rides: [(a: Activity, b: Activity)] = []
            for order in ["1", "2", "3"] { rides.append(try await loop.startActivity(order: order)) }
            for step in 1...10 {
                for (onA, _) in rides { try await update(onA.id, step) }
            }
            primary.crash()
            try standby.promote()
            for step in 11...20 {
                for (onA, _) in rides {
                    // While the node moves, a change is answered 503: a client tries again.
                    _ = try await eventually("step \(step) of \(onA.id) is taken") { () -> Bool? in
                        do {
                            try await update(onA.id, step)
                            return true
                        } catch ClientError.refused(503, _) {
                            return nil
                        }
                    }
                }
            }
            for (onA, onB) in rides {
                try await loop.waitOnB(onB.id, status: "step 20", within: 60)
                let seen = try await loop.statusesOnB(onB.id)
                #expect(Self.inOrder(seen, ["confirmed"] + (1...20).map { "step \($0)" }), "out of order on the phone: \(seen) (\(onA.id))")
                // The latest state, sent after the switch, is applied once.
                #expect(seen.filter { $0 == "step 20" }.count == 1, "the latest state applied \(seen.filter { $0 == "step 20" }.count) times: \(seen)")
            }
            for node in [loop.a!, second] {
                #expect(node.output.contains("Moved to another PostgreSQL host"), "\(node.output.suffix(2_000))")
            }
            await second.stop(signal: SIGTERM)
        }
    }
}

extension FailoverTests {
    /// Issue 58: a synchronous standby promoted with its primary's settings
    /// (`synchronous_standby_names = '*'`, as `pg_basebackup` copies them) waits for a standby of
    /// its own, which is not there: every commit hangs in `SyncRep`, and PostgreSQL has no
    /// timeout for it. The node answers each change 503 with that reason within
    /// `store.commitTimeout`, the next ones at once, `/healthz` says it, and it recovers by
    /// itself once a standby comes — and the held change, confirmed then, has taken effect.
    @Test(.enabled(if: PostgresServer.available, "needs PostgreSQL (apt-get install postgresql; .ci/run installs it)"))
    func aPromotedStandbyThatWaitsForAStandbyOfItsOwnIsAnswered503AndRecoversWhenOneComes() async throws {
        try await withCommitsHeld { held in
            let message = held.message
            #expect(message.contains("commits are waiting for a synchronous standby") && message.contains("synchronous_standby_names is '*'"), "\(message)")
            #expect(message.contains("no standby is connected") && message.contains("may yet take effect"), "\(message)")
            let started = ContinuousClock.now
            guard case .refused(503, let next)? = await held.update(held.seq + 1000) else {
                Issue.record("a change while commits are held was not refused")
                return
            }
            #expect(next.message.contains("commits are waiting for a synchronous standby"), "\(next.message)")
            #expect(ContinuousClock.now - started < .seconds(2), "a change while commits are held waits for its own commit")
            do {
                _ = try await held.client.health()
                Issue.record("/healthz is ok while commits are held")
            } catch ClientError.refused(let status, let error) {
                #expect(status == 503 && error.message.contains("commits are waiting for a synchronous standby"), "\(error.message)")
            }

            // A standby of the promoted one comes: the held commits are confirmed, and the node
            // takes changes again by itself.
            let second = try await PostgresServer.standby(of: held.promoted, named: "standby2", synchronous: false)
            defer { second.stop() }
            _ = try await eventually("the node takes changes again") { await held.update(held.seq + 2000) == nil ? true : nil }
            #expect(try await held.client.health()["status"] == "ok")
            #expect(held.node.output.contains("Writes to the store succeed again"))
            // The change answered unconfirmed was confirmed when the standby came: it took effect.
            let history = try await held.client.history(held.ride)
            #expect(history.contains { $0.type == .contentUpdated && $0.data["content"]?["state"]?["seq"] == .integer(held.seq) })
        }
    }

    /// A node whose commits the database holds still stops on SIGTERM, by itself: its lanes
    /// wait for no held commit past the timeout.
    @Test(.enabled(if: PostgresServer.available, "needs PostgreSQL (apt-get install postgresql; .ci/run installs it)"))
    func aNodeWhoseCommitsAreHeldStopsOnSIGTERM() async throws {
        try await withCommitsHeld { held in
            let started = ContinuousClock.now
            let status = await held.node.stop(signal: SIGTERM)
            #expect(status == 0, "\(held.node.output.suffix(2_000))")
            #expect(ContinuousClock.now - started < .seconds(20), "SIGTERM took \(ContinuousClock.now - started)")
        }
    }

    /// A node on a primary and its synchronous standby; the primary crashed and the standby
    /// promoted with `synchronous_standby_names = '*'` and no standby of its own. `body` gets
    /// the first change answered unconfirmed, once the node has moved.
    private func withCommitsHeld(_ body: (HeldCommits) async throws -> Void) async throws {
        let primary = try await PostgresServer.start()
        defer { primary.stop() }
        let name = PostgresServer.databaseName(of: try await primary.newDatabase())
        let standby = try await PostgresServer.standby(of: primary, synchronous: true)
        defer { standby.stop() }
        // The standby keeps a configuration that names any standby as synchronous, as a copy of
        // its primary's would; it applies once the standby is a primary.
        try await standby.execute("ALTER SYSTEM SET synchronous_standby_names = '*'")
        try await withHTTPClient { http in
            let cluster = try await ClusterTests.Cluster(1, database: bothHosts(primary, standby, database: name), environment: [
                "ISLET_STORE_COMMIT_TIMEOUT": "2s",
            ])
            let admin = cluster.client(0, key: ClusterTests.adminKey, http: http)
            let app = try await admin.createApp(bundleId: "com.example.rides")
            let client = cluster.client(0, key: app.apiKey, http: http)
            let ride = try await client.start(ActivityRequest(attributesType: "RideAttributes", content: ActivityContent(state: ["seq": 0]))).id

            primary.crash()
            try await offThePool { Result { try standby.promote() } }.get()
            try await standby.execute("SELECT pg_reload_conf()")
            _ = try await eventually("the node moves to the promoted standby") {
                cluster.nodes[0].output.contains("Moved to another PostgreSQL host") ? true : nil
            }
            var held = HeldCommits(node: cluster.nodes[0], client: client, ride: ride, promoted: standby, seq: 0, message: "")
            // 503 while the node moves; then the first change it gets through waits for its
            // commit until the timeout.
            (held.seq, held.message) = try await eventually("a change held by its commit") { () -> (Int64, String)? in
                for seq in Int64(1)...200 {
                    guard case .refused(let status, let error)? = await held.update(seq) else { return nil }
                    #expect(status == 503 && error.reason == .unavailable, "\(error)")
                    if error.message.contains("has not confirmed commits within 2") { return (seq, error.message) }
                }
                return nil
            }
            try await body(held)
            await cluster.stop()
        }
    }
}

/// `withCommitsHeld`'s node, and the change it answered unconfirmed.
private struct HeldCommits {
    let node: ServerProcess
    let client: IsletClient
    let ride: ActivityID
    let promoted: PostgresServer
    var seq: Int64
    var message: String

    /// Updates the ride to `seq`; the client's error, if refused.
    func update(_ seq: Int64) async -> ClientError? {
        do {
            _ = try await client.update(ride, ContentUpdate(content: ActivityContent(state: ["seq": .integer(seq)])))
            return nil
        } catch {
            return error as? ClientError
        }
    }
}
