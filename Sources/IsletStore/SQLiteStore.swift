import Foundation
import GRDB
import IsletCore

/// Islet's embedded store: one SQLite file in WAL mode, driven by the core's lifecycle rules.
///
/// Every change runs in a write transaction: the activity is loaded, the core decides, the
/// activity and its events are written, and the transaction commits before the call returns,
/// so a caller acknowledges only what is durable. Changes that arrive together share one
/// transaction, each in its own savepoint (`GroupCommit`): one commit, one wait for the disk.
/// Committed events go to `onCommit` in commit order, from the single writer, so subscribers
/// see them in id order.
public final class SQLiteStore: Sendable {
    /// How hard a commit waits for the disk.
    public enum Durability: String, Sendable, CaseIterable {
        /// Every commit reaches the disk before it returns (`synchronous=FULL`): nothing
        /// acknowledged is lost even on power loss.
        case full
        /// Commits survive a crash of the process but not of the machine (`synchronous=NORMAL`).
        case normal
    }

    /// The lifecycle rules the store applies.
    public let rules: LifecycleRules
    let pool: DatabasePool
    let groupCommit: GroupCommit
    let health: WriteHealth

    /// Opens (creating and migrating as needed) the store at `path`.
    ///
    /// - Parameters:
    ///   - path: The SQLite file; its directory must exist.
    ///   - rules: The lifecycle rules to apply.
    ///   - durability: How hard commits wait for the disk.
    ///   - onCommit: Receives each transaction's events after it commits, in commit order.
    ///   - onWriteHealth: Told when writes start failing for the storage's sake (a full disk),
    ///     and with `nil` when they succeed again.
    public init(
        path: String, rules: LifecycleRules = LifecycleRules(), durability: Durability = .full,
        onCommit: @escaping @Sendable ([EncodedEvent]) -> Void = { _ in },
        onWriteHealth: @escaping @Sendable (WriteFailure?) -> Void = { _ in }
    ) throws {
        var configuration = Configuration()
        let synchronous = durability == .full ? "FULL" : "NORMAL"
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = \(synchronous)")
            try db.execute(sql: "PRAGMA wal_autocheckpoint = \(Checkpointer.backstopPages)")
            // The log file shrinks back to this after a checkpoint lets it restart.
            try db.execute(sql: "PRAGMA journal_size_limit = \(Checkpointer.logSizeLimit)")
        }
        configuration.busyMode = .timeout(10)
        self.pool = try DatabasePool(path: path, configuration: configuration)
        self.rules = rules
        self.health = WriteHealth(changed: onWriteHealth)
        let checkpointer = try Checkpointer(path: path, configuration: configuration)
        self.groupCommit = GroupCommit(pool: pool, publish: onCommit, committed: { checkpointer.committed() })
        try Schema.migrator.migrate(pool)
    }

    /// Runs `body` in a write transaction (shared with the changes that arrive meanwhile: group
    /// commit) and hands its events to `onCommit` once committed.
    func write<T: Sendable>(
        now: Date, _ body: @escaping @Sendable (Database, inout EventLog) throws -> T
    ) async throws -> T {
        try await watched { try await self.groupCommit.write(now: now, body) }
    }

    /// Runs `body` in one write transaction that records no event (keys, shapes, settings of an
    /// app), so it needs no time.
    func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await watched { try await self.pool.write(body) }
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
            if let failure = WriteHealth.storageFailure(error) {
                throw IsletError(.unavailable, "The store cannot take writes now: \(failure). Nothing was changed.")
            }
            throw error
        }
    }

    /// Runs `body` on a reader, concurrently with writes.
    func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await pool.read(body)
    }
}

/// The events a write transaction records, numbered as they are inserted.
struct EventLog {
    let now: Date
    private(set) var events: [EncodedEvent] = []

    init(now: Date) {
        self.now = now
    }

    /// Records an activity's events.
    mutating func record(_ transition: Transition, of activity: Activity, in db: Database) throws {
        for payload in transition.payloads {
            try record(payload, bundleId: activity.bundleId, deviceId: activity.deviceId, activityId: activity.id, in: db)
        }
    }

    /// Records one event.
    mutating func record(
        _ payload: EventPayload, bundleId: BundleID, deviceId: DeviceID, activityId: ActivityID?, in db: Database
    ) throws {
        let data = payload.encodedData()
        try db.cachedStatement(sql: "INSERT INTO event (time, type, bundleId, deviceId, activityId, data) VALUES (?, ?, ?, ?, ?, ?)")
            .execute(arguments: [now.timeIntervalSince1970, payload.type.rawValue, bundleId, deviceId, activityId, data])
        events.append(EncodedEvent(
            id: db.lastInsertedRowID, type: payload.type, time: now, bundleId: bundleId, deviceId: deviceId,
            activityId: activityId, dataJSON: data
        ))
    }
}
