import Foundation
import IsletCore
@testable import IsletEngine
@testable import IsletPostgres
import IsletTestSupport
import Logging
import PostgresNIO
import Testing

/// The PostgreSQL store's first pieces (docs/cluster.md), against a real server the test starts.
@Suite("PostgreSQL store", .hangDetector)
struct PostgresStoreTests {
    @Test(.enabled(if: PostgresServer.available, "needs PostgreSQL (apt-get install postgresql; .ci/run installs it)"))
    func aNodeReachesItsDatabase() async throws {
        let server = try await PostgresServer.start()
        defer { server.stop() }
        let version = try await PostgresProbe.version(of: try PostgresAddress(server.url))
        #expect(version.hasPrefix("PostgreSQL "), "\(version)")
    }

    /// A multi-host address (docs/cluster.md §7): a node passes over a host that cannot be reached,
    /// and one that does not fit `target_session_attrs`, saying why for each, and opens on the
    /// first that fits; `any` takes the first that answers.
    @Test(.enabled(if: PostgresServer.available, "needs PostgreSQL"))
    func aNodeOpensOnTheFirstHostThatFitsAndSaysWhyItPassedTheOthersOver() async throws {
        let database = try await PostgresServer.newDatabase()
        let live = try PostgresAddress(database).endpoints[0]
        let name = PostgresServer.databaseName(of: database)
        let logger = Logger(label: "test")
        // Nothing listens on port 1 of this machine.
        let text = "postgres://islet@127.0.0.1:1,\(live)/\(name)?connect_timeout=10&target_session_attrs=read-write"
        let chosen = try await HostSelector.choose(try PostgresAddress(text), connectTimeout: .seconds(10), logger: logger)
        #expect(chosen.endpoints == [live])
        let store = try await PostgresStore.open(StoreOptions(location: text, commitTimeout: .testCommits), logger: logger)
        #expect(store.address == (try PostgresAddress(text)).redacted && store.address.contains("127.0.0.1:1,"))
        // The test's server has no standby: a failover could lose the last commits, and /healthz says so.
        let running = Task { try await store.run() }
        let replication = try await store.replication()
        #expect(replication?.mode == "asynchronous" && replication?.synchronousCommit == "on", "\(String(describing: replication))")
        running.cancel()
        try await running.value

        // A database whose sessions are read-only (as a standby's are) does not fit read-write.
        try await PostgresServer.execute("ALTER DATABASE \(name) SET default_transaction_read_only = on", in: "postgres")
        let refused = await #expect(throws: IsletError.self) {
            try await HostSelector.choose(try PostgresAddress(text), connectTimeout: .seconds(10), logger: logger)
        }
        #expect(refused?.reason == .unavailable, "\(String(describing: refused))")
        #expect(refused?.message.contains("127.0.0.1:1: PostgreSQL cannot be reached") == true, "\(String(describing: refused))")
        #expect(refused?.message.contains("\(live): read-only") == true, "\(String(describing: refused))")
        // `primary` asks whether it is a standby (it is not); `any` takes the first that answers.
        for attributes in ["primary", "any"] {
            let other = text.replacingOccurrences(of: "read-write", with: attributes)
            #expect(try await HostSelector.choose(try PostgresAddress(other), connectTimeout: .seconds(10), logger: logger).endpoints == [live])
        }
    }

    /// A primary and its synchronous standby (Debian's PostgreSQL, `pg_basebackup -R`): a node
    /// given both chooses by `target_session_attrs` — the primary for read-write, the standby
    /// for prefer-standby — says the commits wait for the standby, and after the primary
    /// crashes and the standby is promoted, choosing again finds the promoted one.
    @Test(.enabled(if: PostgresServer.available, "needs PostgreSQL"))
    func aNodeChoosesThePrimaryOverItsStandbyAndThePromotedStandbyAfterAFailover() async throws {
        let primary = try await PostgresServer.start()
        defer { primary.stop() }
        let name = PostgresServer.databaseName(of: try await primary.newDatabase())
        let standby = try await PostgresServer.standby(of: primary, synchronous: true)
        defer { standby.stop() }
        let logger = Logger(label: "test")
        func address(_ attributes: String) throws -> PostgresAddress {
            try PostgresAddress(
                "postgres://islet@127.0.0.1:\(standby.port),127.0.0.1:\(primary.port)/\(name)?connect_timeout=10&target_session_attrs=\(attributes)"
            )
        }
        func chosen(_ attributes: String) async throws -> Int {
            try await HostSelector.choose(try address(attributes), connectTimeout: .seconds(10), logger: logger).port
        }
        #expect(try await chosen("read-write") == primary.port)
        #expect(try await chosen("primary") == primary.port)
        #expect(try await chosen("prefer-standby") == standby.port)
        #expect(try await chosen("any") == standby.port)
        let store = try await PostgresStore.open(StoreOptions(location: try address("read-write").redacted, commitTimeout: .testCommits), logger: logger)
        let running = Task { try await store.run() }
        #expect(try await store.replication() == Replication(synchronousCommit: "on", synchronousStandbyNames: "standby1"))
        #expect(try await store.replication()?.mode == "synchronous")
        // Asked of the host now: a setting changed at run time shows at the next ask.
        try await primary.execute("ALTER SYSTEM SET synchronous_standby_names = ''")
        try await primary.execute("SELECT pg_reload_conf()")
        _ = try await eventually("the primary's new setting is read") { try await store.replication()?.mode == "asynchronous" ? true : nil }
        running.cancel()
        try await running.value

        primary.crash()
        try standby.promote()
        #expect(try await chosen("read-write") == standby.port)
        #expect(try await chosen("prefer-standby") == standby.port, "no standby answers: any host")
    }

    /// What a failover keeps, from the two settings (docs/cluster.md §7), in one rule.
    /// A crashing primary resets its connections, and postgres-nio's older path passes the
    /// socket's failure on as NIO's own error: the database is away (503, and another host may
    /// be the primary), not an internal error. Found by the failover test with release nodes.
    @Test func aConnectionResetIsTheDatabaseAwayNotAnInternalError() {
        for error: any Error in [IOError(errnoCode: ECONNRESET, reason: "read(descriptor:pointer:size:)"), ChannelError.ioOnClosedChannel] {
            #expect(PostgresFailure.storageFailure(error)?.hasPrefix("PostgreSQL cannot be reached") == true, "\(error)")
            #expect(PostgresFailure.losesHost(error), "\(error)")
        }
        #expect(PostgresFailure.storageFailure(CancellationError()) == nil)
    }

    @Test func aCommitWaitsForAStandbyOnlyWhenTheServerNamesOneAndTheSessionWaits() {
        #expect(Replication(synchronousCommit: "on", synchronousStandbyNames: "standby1").mode == "synchronous")
        #expect(Replication(synchronousCommit: "remote_apply", synchronousStandbyNames: "ANY 1 (a, b)").mode == "synchronous")
        #expect(Replication(synchronousCommit: "on", synchronousStandbyNames: "").mode == "asynchronous")
        #expect(Replication(synchronousCommit: "local", synchronousStandbyNames: "standby1").mode == "asynchronous")
        #expect(Replication(synchronousCommit: "off", synchronousStandbyNames: "*").mode == "asynchronous")
    }

    /// postgres-nio never answers a statement sent on a connection that has closed: the store's
    /// statements fail instead (a writer lane once waited forever on a `ROLLBACK` after
    /// PostgreSQL stopped, and its node never shut down).
    @Test(.enabled(if: PostgresServer.available, "needs PostgreSQL"), .hangDetector)
    func aStatementOnAClosedConnectionFailsInsteadOfWaitingForever() async throws {
        let address = try PostgresAddress(try await PostgresServer.newDatabase())
        let logger = Logger(label: "test")
        let connection = try await address.connect(connectTimeout: .seconds(10), logger: logger)
        #expect(try await connection.run("SELECT 1", logger: logger).get().rows.count == 1)
        try await connection.close()
        let failure = await #expect(throws: (any Error).self) { try await connection.run("ROLLBACK", logger: logger).get() }
        #expect(failure.flatMap(PostgresFailure.storageFailure) != nil, "\(String(describing: failure))")
        // The same on the store's synchronous path (a writer lane's thread).
        let session = PostgresSession(connection: connection, logger: logger)
        #expect(throws: (any Error).self) { try session.execute("ROLLBACK", []) }
    }

    /// Issue 27, the README walked: `Examples/cluster/run.sh` starts its nodes together on a new
    /// database, and now and then one of them died as it started — "duplicate key value violates
    /// unique constraint apikey_pkey": each stored the admin key they share where there was none
    /// yet, and PostgreSQL refused the later insert as a unique violation, which is not one of the
    /// failures a transaction is run again after. Nodes that store that key at once all start.
    /// Issue 28: two changes to different activities never wait for or undo each other, from
    /// one node's several writer lanes or from two nodes — under SERIALIZABLE, PostgreSQL's
    /// page-wide predicate locks made every two concurrent batches collide (642 aborts in 16 s
    /// of ingest). Changes to one activity still take turns, and every one is kept.
    @Test(.enabled(if: PostgresServer.available, "needs PostgreSQL"), .hangDetector)
    func changesToDifferentActivitiesNeverMeetAndChangesToOneTakeTurns() async throws {
        var rules = LifecycleRules()
        rules.maxActivitiesPerApp = 100
        rules.maxActivitiesPerDevice = 100
        try await EngineFixture.with(.postgres, rules: rules) { first in
            let second = try await first.node()
            let nodes = [first, second]
            var owned: [[ActivityID]] = [[], []]
            for index in 0..<32 { owned[index % 2].append(try await nodes[index % 2].start(ride(Int64(index))).id) }
            // Each node updates only its own activities, 16 changes in flight on each.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (node, ids) in owned.enumerated() {
                    for (lane, id) in ids.enumerated() {
                        group.addTask {
                            for step in 1...10 {
                                _ = try await nodes[node].apply(update(["speed": .integer(Int64(lane * 100 + step))]), to: id, at: at(TimeInterval(step)))
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(first.store.changesRunAgain == 0)
            #expect(second.store.changesRunAgain == 0)

            // Both nodes hammer one activity: they take turns, and every update is kept.
            let shared = owned[0][0]
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<16 {
                    group.addTask {
                        for step in 1...5 {
                            _ = try await nodes[writer % 2].apply(update(["writer": .integer(Int64(writer)), "step": .integer(Int64(step))]), to: shared, at: at(20))
                        }
                    }
                }
                try await group.waitForAll()
            }
            let updates = try await first.engine.history(of: shared, owner: nil).filter { $0.type == .contentUpdated }
            #expect(updates.count == 10 + 16 * 5)
            try await second.stop()
        }
    }

    @Test(.enabled(if: PostgresServer.available, "needs PostgreSQL"), .hangDetector)
    func nodesStoringTheirSharedAdminKeyAtOnceAllSucceed() async throws {
        // No admin key yet, as on a new database.
        try await Self.race(rounds: 10, reset: "DELETE FROM apiKey WHERE bundleId IS NULL AND deviceId IS NULL") { node, round in
            try await node.engine.replaceAdminKey(hash: "admin-\(round)")
        } then: { database, round in
            let admins = try await PostgresServer.rows("SELECT hash FROM apiKey WHERE bundleId IS NULL AND deviceId IS NULL", in: database)
            #expect(admins == ["admin-\(round)"])
        }
    }

    /// Event ids are drawn without commits taking turns, so they may become visible out of
    /// order. An id another transaction drew and is still committing holds back the later ones
    /// — no reader sees an id and then a lower one — and an id whose transaction rolls back is
    /// passed over, not waited for.
    @Test(.enabled(if: PostgresServer.available, "needs PostgreSQL"), .hangDetector)
    func anIdStillCommittingHoldsLaterOnesBackAndARolledBackOneIsPassedOver() async throws {
        try await EngineFixture.with(.postgres) { fixture in
            let engine = fixture.engine
            let id = try await fixture.start(ride(0)).id
            let logger = Logger(label: "test")
            let other = try await PostgresAddress(fixture.database!).connect(connectTimeout: .seconds(10), logger: logger)
            // Closed before it is let go of, on either path (postgres-nio asserts it).
            do {
                for outcome in ["COMMIT", "ROLLBACK"] {
                    // Another writer draws an id, as a transaction about to commit does, and holds it.
                    let held = try await Self.drawAndInsertAnEvent(on: other, logger: logger)
                    // This node commits an update meanwhile: its events come after the held id.
                    let change = Task { try await engine.apply(update(["speed": .integer(1)]), to: id, owner: nil) }
                    try await within {
                        while try await PostgresServer.rows("SELECT id FROM event WHERE id > \(held)", in: fixture.database!).isEmpty {
                            try await Task.sleep(for: .milliseconds(10))
                        }
                    }
                    _ = try await other.run(PostgresQuery(unsafeSQL: outcome), logger: logger).get()
                    _ = try await change.value
                    // The answer waits for the publication at most `EventTail.publicationWait`
                    // (2 s; a loaded machine may pass it): what is checked is what the streams get
                    // once the change's own events are out.
                    let own = try #require(try await PostgresServer.rows("SELECT max(id) FROM event", in: fixture.database!).first.flatMap { Int64($0) })
                    try await within {
                        while !fixture.recorded.events.contains(where: { $0.id == own }) { try await Task.sleep(for: .milliseconds(10)) }
                    }
                    let published = fixture.recorded.events.map(\.id)
                    #expect(published == published.sorted() && Set(published).count == published.count, "\(published)")
                    #expect(published.contains(held) == (outcome == "COMMIT"), "\(outcome): \(held) in \(published)")
                    #expect(try await engine.lastEventID() == published.last, "\(published)")
                }
                try await other.close()
            } catch {
                try? await other.close()
                throw error
            }
        }
    }

    /// Another node's events come with its commit's notification: a node publishes them in
    /// order without reading them back (issue 42: a read per commit made two nodes cost 1.3x
    /// what one does). A notification of ids alone — a node of an earlier version, or events too
    /// large for a notification — still brings its events, by a read.
    @Test(.enabled(if: PostgresServer.available, "needs PostgreSQL"), .hangDetector)
    func anotherNodesEventsComeWithItsNotificationsNotByReads() async throws {
        try await EngineFixture.with(.postgres) { first in
            let second = try await first.node()
            let id = try await first.start(ride(0)).id
            let readsBefore = second.store.eventReads
            for step in 1...100 {
                _ = try await first.apply(update(["speed": .integer(Int64(step))]), to: id, at: at(TimeInterval(step)))
            }
            let last = try await first.engine.lastEventID()
            try await within {
                while !second.recorded.events.contains(where: { $0.id == last }) { try await Task.sleep(for: .milliseconds(10)) }
            }
            let after = second.store.eventReads
            let reads = after.merging(readsBefore) { now, then in now - then }
            // None because a notification came without its events; the timer's, once a second,
            // and a few for events that waited on a loaded machine are not counted.
            #expect(reads["notification", default: 0] == 0, "\(reads)")
            #expect(reads["wait", default: 0] + reads["gap", default: 0] < 20, "\(reads)")
            let published = second.recorded.events.map(\.id)
            #expect(published == published.sorted() && Set(published).count == published.count, "\(published)")
            let since = try #require(second.recorded.events.first?.id)
            #expect(second.recorded.events.count >= 101)
            #expect(first.recorded.events.filter { $0.id >= since }.map(\.json) == second.recorded.events.map(\.json))

            // A commit whose notification names its id alone.
            let logger = Logger(label: "test")
            let other = try await PostgresAddress(first.database!).connect(connectTimeout: .seconds(10), logger: logger)
            do {
                let held = try await Self.drawAndInsertAnEvent(on: other, logger: logger)
                _ = try await other.run("SELECT pg_notify('\(PostgresWriter.channel)', '\(held)')", logger: logger).get()
                _ = try await other.run("COMMIT", logger: logger).get()
                try await within {
                    while !second.recorded.events.contains(where: { $0.id == held }) { try await Task.sleep(for: .milliseconds(10)) }
                }
                try await other.close()
            } catch {
                try? await other.close()
                throw error
            }
            try await second.stop()
        }
    }

    /// A commit of more events than a notification can name (8,000 bytes of ids, 400 at worst)
    /// commits, and the other node publishes every one of them, by a read. A send's batch of
    /// 1,000 phones once failed its commit here ("payload string too long"), again and again.
    @Test(.enabled(if: PostgresServer.available, "needs PostgreSQL"), .hangDetector)
    func aCommitOfMoreEventsThanANotificationNamesReachesTheOtherNode() async throws {
        try await EngineFixture.with(.postgres) { first in
            let second = try await first.node()
            let count = 10 * EventNotice.maximumIds
            try await first.engine.write { tx in
                for index in 0..<count {
                    let record = IgnoredUpdate(
                        reason: .invalidPayload, action: "update", content: nil, timestamp: tx.now, lastUpdateTimestamp: nil, message: "push \(index)"
                    )
                    try tx.append(.updateIgnored(record), bundleId: "com.example.bike", deviceId: "default", activityId: nil)
                }
            }
            let last = try await first.engine.lastEventID()
            try await within {
                while !second.recorded.events.contains(where: { $0.id == last }) { try await Task.sleep(for: .milliseconds(10)) }
            }
            let published = second.recorded.events.suffix(count)
            #expect(published.count == count && published.map(\.id) == Array(published.first!.id...last))
            try await second.stop()
        }
    }

    /// Nodes starting together on a new database each create the default device: one inserts
    /// it, and the others' inserts, meeting that row, run again and find it — none fails (the
    /// cluster example's second node once exited here).
    @Test(.enabled(if: PostgresServer.available, "needs PostgreSQL"), .hangDetector)
    func nodesCreatingTheDefaultDeviceAtOnceAllSucceed() async throws {
        try await Self.race(rounds: 5, reset: "DELETE FROM device WHERE id = 'default'") { node, _ in
            try await node.engine.ensureDefaultDevice()
        } then: { database, _ in
            let devices = try await PostgresServer.rows("SELECT id FROM device WHERE id = 'default'", in: database)
            #expect(devices == ["default"])
        }
    }

    /// Begins a transaction on `connection` that draws an event id as a writer does (under the
    /// events lock taken shared) and inserts its event; returns the id. The caller ends it.
    private static func drawAndInsertAnEvent(on connection: PostgresConnection, logger: Logger) async throws -> Int64 {
        _ = try await connection.run("BEGIN", logger: logger).get()
        _ = try await connection.run("SELECT pg_advisory_xact_lock_shared(\(PostgresWriter.eventsLock))", logger: logger).get()
        let id = try await connection.run("SELECT nextval('event_id')", logger: logger).get().rows.first!.decode(Int64.self)
        _ = try await connection.run(
            "INSERT INTO event (id, time, type, bundleId, deviceId, data) VALUES (\(id), 0, 'settingsChanged', 'com.example.bike', 'default', '{}')",
            logger: logger
        ).get()
        return id
    }

    /// Four nodes on one new database, `rounds` times: `reset` runs, then `change` on every node
    /// at once, then `check`, given the database and the round.
    private static func race(
        rounds: Int, reset: String, _ change: @escaping @Sendable (EngineFixture, Int) async throws -> Void,
        then check: (String, Int) async throws -> Void
    ) async throws {
        try await EngineFixture.with(.postgres) { first in
            var nodes = [first]
            for _ in 0..<3 { nodes.append(try await first.node()) }
            for round in 0..<rounds {
                _ = try await PostgresServer.rows(reset, in: first.database!)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for node in nodes { group.addTask { try await change(node, round) } }
                    try await group.waitForAll()
                }
                try await check(first.database!, round)
            }
            for node in nodes.dropFirst() { try await node.stop() }
        }
    }
}
