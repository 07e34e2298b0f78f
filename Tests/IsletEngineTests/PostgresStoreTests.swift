import Foundation
import IsletCore
import IsletEngine
@testable import IsletPostgres
import IsletTestSupport
import Logging
import PostgresNIO
import Testing

/// The PostgreSQL store's first pieces (docs/cluster.md), against a real server the test starts.
@Suite("PostgreSQL store")
struct PostgresStoreTests {
    @Test(.enabled(if: PostgresServer.available, "needs PostgreSQL (apt-get install postgresql; .ci/run installs it)"))
    func aNodeReachesItsDatabase() async throws {
        let server = try PostgresServer()
        defer { server.stop() }
        let version = try await PostgresProbe.version(of: try PostgresAddress(server.url))
        #expect(version.hasPrefix("PostgreSQL "), "\(version)")
    }

    /// postgres-nio never answers a statement sent on a connection that has closed: the store's
    /// statements fail instead (a writer lane once waited forever on a `ROLLBACK` after
    /// PostgreSQL stopped, and its node never shut down).
    @Test(.enabled(if: PostgresServer.available, "needs PostgreSQL"), .timeLimit(.minutes(1)))
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
        #expect(throws: (any Error).self) { try session.execute("ROLLBACK") }
    }

    /// Issue 27, the README walked: `Examples/cluster/run.sh` starts its nodes together on a new
    /// database, and now and then one of them died as it started — "duplicate key value violates
    /// unique constraint apikey_pkey": each stored the admin key they share where there was none
    /// yet, and PostgreSQL refused the later insert as a unique violation, which is not one of the
    /// failures a transaction is run again after. Nodes that store that key at once all start.
    @Test(.enabled(if: PostgresServer.available, "needs PostgreSQL"), .timeLimit(.minutes(2)))
    func nodesStoringTheirSharedAdminKeyAtOnceAllSucceed() async throws {
        try await EngineFixture.with(.postgres) { first in
            var nodes = [first]
            for _ in 0..<3 { nodes.append(try await first.node()) }
            for round in 0..<10 {
                // No admin key yet, as on a new database.
                _ = try await PostgresServer.rows("DELETE FROM apiKey WHERE bundleId IS NULL AND deviceId IS NULL", in: first.database!)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for node in nodes { group.addTask { try await node.engine.replaceAdminKey(hash: "admin-\(round)") } }
                    try await group.waitForAll()
                }
                let admins = try await PostgresServer.rows("SELECT hash FROM apiKey WHERE bundleId IS NULL AND deviceId IS NULL", in: first.database!)
                #expect(admins == ["admin-\(round)"])
            }
            for node in nodes.dropFirst() { try await node.stop() }
        }
    }
}
