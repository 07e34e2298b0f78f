import Foundation
import GRDB
import IsletCore
import IsletEngine
import IsletSQL
import ServiceLifecycle

/// Islet's embedded store: one SQLite file in WAL mode, implementing the engine's `Store`.
///
/// Every change runs in a write transaction and commits before the call returns, so a caller
/// acknowledges only what is durable. Changes that arrive together share one transaction, each
/// in its own savepoint (`GroupCommit`): one commit, one wait for the disk. The writer and the
/// checkpointer run in `run()`, as one of the engine's services.
public final class SQLiteStore: Store {
    public let commits = CommitLog()
    /// One process writes to an SQLite file (the data directory's lock sees to it).
    public let isShared = false
    public let kind = "sqlite"
    public let location: String
    let pool: DatabasePool
    let groupCommit: GroupCommit
    let health: WriteHealth
    private let checkpointer: Checkpointer

    /// Opens (creating and migrating as needed) the store.
    ///
    /// - Parameter options: `location` is the SQLite file (its directory must exist); `durability`
    ///   how hard commits wait for the disk; `onWriteHealth` is told when writes start failing
    ///   for the storage's sake (a full disk) and when they succeed again.
    public init(_ options: StoreOptions) throws {
        var configuration = Configuration()
        let synchronous = options.durability == .full ? "FULL" : "NORMAL"
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = \(synchronous)")
            try db.execute(sql: "PRAGMA wal_autocheckpoint = \(Checkpointer.backstopPages)")
            // The log file shrinks back to this after a checkpoint lets it restart.
            try db.execute(sql: "PRAGMA journal_size_limit = \(Checkpointer.logSizeLimit)")
        }
        configuration.busyMode = .timeout(10)
        try Self.createReadableByOwnerOnly(options.location)
        self.location = options.location
        self.pool = try DatabasePool(path: options.location, configuration: configuration)
        // GRDB sets the writer to `synchronous=NORMAL` when it turns WAL on, after
        // `prepareDatabase` ran: the durability asked for is set again on the writer itself.
        try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = \(synchronous)") }
        self.health = WriteHealth(storageFailure: SQLiteFailure.storageFailure, changed: options.onWriteHealth)
        let checkpointer = try Checkpointer(path: options.location, configuration: configuration)
        self.checkpointer = checkpointer
        self.groupCommit = GroupCommit(pool: pool, log: commits, committed: { checkpointer.committed() })
        try pool.read { db in try Schema.refuseNewer(db, path: options.location) }
        try Schema.migrator.migrate(pool)
    }

    /// Opens the store at `path` with the defaults: for tests and tools.
    public convenience init(path: String, durability: Durability = .full) throws {
        try self.init(StoreOptions(location: path, durability: durability))
    }

    /// The database holds delivery credentials' private keys: it, and the log files SQLite
    /// makes beside it (which take the database file's mode), are readable by the owner only.
    private static func createReadableByOwnerOnly(_ path: String) throws {
        let files = FileManager.default
        if !files.fileExists(atPath: path) {
            guard files.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
                throw IsletError(.internalError, "Cannot create the database file \(path).")
            }
        }
        for file in [path, path + "-wal", path + "-shm"] where files.fileExists(atPath: file) {
            try files.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file)
        }
    }

    /// `activity` is not needed: a change's read of its activity costs no round trip here.
    public func write<T: Sendable>(
        now: Date, about activity: ActivityID?, _ work: @escaping @Sendable (any Transaction) throws -> T
    ) async throws -> Committed<T> {
        try await watched { try await self.groupCommit.write(now: now, work) }
    }

    public func submit<T: Sendable>(
        now: Date, about activity: ActivityID?, _ work: @escaping @Sendable (any Transaction) throws -> T,
        completion: @escaping @Sendable (Result<Committed<T>, any Error>) -> Void
    ) {
        groupCommit.submit(now: now, work) { [health] result in
            switch result {
            case .success:
                health.succeeded()
                completion(result)
            case .failure(let error):
                health.failed(error)
                if let failure = SQLiteFailure.storageFailure(error) {
                    return completion(.failure(IsletError(.unavailable, "The store cannot take writes now: \(failure). Nothing was changed.")))
                }
                completion(result)
            }
        }
    }

    public func read<T: Sendable>(_ work: @escaping @Sendable (any StoreReading) throws -> T) async throws -> T {
        try await pool.read { db in try work(SQLSnapshot(session: SQLiteSession(db))) }
    }

    public func run() async throws {
        await withGracefulShutdownHandler {
            await withTaskCancellationHandler {
                await withDiscardingTaskGroup { group in
                    group.addTask { await self.checkpointer.run() }
                    await self.groupCommit.run()
                    self.checkpointer.stop()
                }
            } onCancel: {
                self.groupCommit.stop()
            }
        } onGracefulShutdown: {
            self.groupCommit.stop()
        }
    }

    /// Runs a write, reporting its outcome to `health`. A failure of the storage itself (a full
    /// disk) reaches the caller as `unavailable`, a refusal with a stable reason, not as an
    /// internal error: the request was fine, the server cannot keep it now.
    private func watched<T>(_ write: () async throws -> T) async throws -> T {
        do {
            let value = try await write()
            health.succeeded()
            return value
        } catch {
            health.failed(error)
            if let failure = SQLiteFailure.storageFailure(error) {
                throw IsletError(.unavailable, "The store cannot take writes now: \(failure). Nothing was changed.")
            }
            throw error
        }
    }

    public func checkWrites(quietInterval: Duration) async -> WriteFailure? {
        guard health.current != nil || health.quiet(for: quietInterval) else { return nil }
        do {
            // As much as a change writes (a few pages, which a full disk or database cannot
            // take: 8 KB that need fresh pages), removed in the same transaction.
            try await watched {
                try await pool.write { db in
                    try db.execute(sql: "INSERT INTO writeProbe (at, pad) VALUES (?, zeroblob(8192))", arguments: [Date().timeIntervalSince1970])
                    try db.execute(sql: "DELETE FROM writeProbe")
                }
            }
        } catch {
            return health.current
        }
        return nil
    }
}
