import Foundation
import IsletCore
import IsletEngine
import Logging
import PostgresNIO

/// Brings a database's schema up to date: `islet migrate`, and every node as it opens the store.
///
/// Each migration runs in a transaction holding an advisory lock, so nodes starting together
/// migrate one at a time (the second finds nothing left to do), and commits with its row in
/// `islet_migration`: one that fails leaves the database as it was before it.
public enum PostgresMigrator {
    /// The newest schema version this build knows.
    public static var latest: Int { PostgresSchema.migrations.map(\.version).max() ?? 0 }

    /// Applies the migrations the database lacks; returns the versions applied.
    ///
    /// - Throws: `unavailable` when the database cannot be reached or refuses the connection
    ///   (TLS included); `invalidRequest` when `sslrootcert` cannot be read, or the database was
    ///   migrated by a newer Islet (this one would misread it).
    @discardableResult
    public static func migrate(_ given: PostgresAddress, logger: Logger) async throws -> [Int] {
        // A multi-host address migrates the host a node would work with (docs/cluster.md §7).
        let address = try await HostSelector.choose(given, connectTimeout: .seconds(10), logger: logger)
        let connection: PostgresConnection
        do {
            connection = try await address.connect(connectTimeout: .seconds(10), logger: logger)
        } catch let error as IsletError {
            // An sslrootcert that cannot be read: said before any connection was tried.
            throw error
        } catch {
            throw IsletError(.unavailable, "Cannot reach PostgreSQL at \(address.redacted): \(address.tlsRefusal(error) ?? Self.describe(error)).")
        }
        do {
            let done = try await migrate(on: connection, address: address, logger: logger)
            try? await connection.close()
            return done
        } catch {
            try? await connection.close()
            throw error
        }
    }

    /// One transaction per migration, each holding the migration lock from its start: the lock
    /// is the transaction's (`pg_advisory_xact_lock`), so it goes with the commit or rollback
    /// whatever happens to the connection afterwards.
    private static func migrate(on connection: PostgresConnection, address: PostgresAddress, logger: Logger) async throws -> [Int] {
        var done: [Int] = []
        while true {
            _ = try await connection.run("BEGIN", logger: logger).get()
            do {
                _ = try await connection.run("SELECT pg_advisory_xact_lock(\(PostgresSchema.migrationLock))", logger: logger).get()
                _ = try await connection.run(
                    """
                    CREATE TABLE IF NOT EXISTS islet_migration (
                        version integer PRIMARY KEY, name text NOT NULL, appliedAt timestamptz NOT NULL DEFAULT now())
                    """,
                    logger: logger
                ).get()
                var applied = Set<Int>()
                for row in try await connection.run("SELECT version FROM islet_migration", logger: logger).get().rows {
                    applied.insert(try row.decode(Int.self))
                }
                if let newest = applied.max(), newest > latest {
                    throw IsletError(
                        .invalidRequest,
                        "The database at \(address.redacted) has schema version \(newest); this Islet knows up to \(latest). Run a newer Islet."
                    )
                }
                guard let migration = PostgresSchema.migrations.sorted(by: { $0.version < $1.version }).first(where: { !applied.contains($0.version) })
                else {
                    _ = try await connection.run("COMMIT", logger: logger).get()
                    return done
                }
                do {
                    for statement in migration.statements {
                        _ = try await connection.run(PostgresQuery(unsafeSQL: statement), logger: logger).get()
                    }
                    _ = try await connection.run(
                        "INSERT INTO islet_migration (version, name) VALUES (\(migration.version), \(migration.name))", logger: logger
                    ).get()
                    _ = try await connection.run("COMMIT", logger: logger).get()
                } catch {
                    throw IsletError(.internalError, "Migration \(migration.version) (\(migration.name)) failed: \(Self.describe(error)).")
                }
                logger.info("Migrated the database", metadata: ["version": "\(migration.version)", "name": "\(migration.name)"])
                done.append(migration.version)
            } catch {
                _ = try? await connection.run("ROLLBACK", logger: logger).get()
                throw error
            }
        }
    }

    /// An error as a person reads it: the server's message when it sent one.
    static func describe(_ error: any Error) -> String {
        if let error = error as? PSQLError {
            if let message = error.serverInfo?[.message] { return message }
            if let underlying = error.underlying { return "\(error.code): \(underlying)" }
            return "\(error.code)"
        }
        return "\(error)"
    }
}
