import Foundation
import IsletCore
import IsletEngine

/// The driver seam: one connection of one database, as the SQL store's statements use it —
/// inside a write transaction or on a reader. Everything above it (every statement, every row
/// mapping, docs/engine.md "One SQL store") is written once; a driver says only how its
/// database runs a statement, counts and numbers what it wrote, and locks.
///
/// Statements are written with numbered placeholders, `$1`, `$2`…, as PostgreSQL takes them;
/// a driver whose database writes them otherwise (SQLite: `?1`) rewrites them (`SQLDialect`).
public protocol SQLSession: AnyObject {
    /// What the database is: the few places where its SQL must differ ask.
    var dialect: SQLDialect { get }

    /// How the reads of a write transaction lock what they read: `.none` on a reader, and
    /// always on SQLite, whose one writer meets nobody.
    var locking: Locking { get }

    /// Rows a write transaction read that change rarely, kept until a write to them or the
    /// change that read them is undone; only when `caches` (a store of several writers, where
    /// a read is a round trip).
    var cache: TransactionCache { get set }
    var caches: Bool { get }

    /// The newest event id a read may return, when events may become visible out of id order
    /// (PostgreSQL's, `EventTail`): what the node has published, below which none is missing.
    var eventHorizon: EventID? { get }

    /// Runs a statement and reads its rows, each by `read`. What the transaction wrote is
    /// seen; `reading` names the one activity a statement reads, when it reads one (a driver
    /// that holds other activities' writes back need not send them first).
    func rows<T>(_ sql: String, _ values: [(any SQLBindable)?], reading: ActivityID?, _ read: (any SQLRow) throws -> T) throws -> [T]

    /// Runs a statement that writes, when its answer is not needed: a driver may hold it back
    /// until the change reads or ends.
    func execute(_ sql: String, _ values: [(any SQLBindable)?]) throws

    /// Runs a statement that writes, now; returns how many rows it changed.
    func count(_ sql: String, _ values: [(any SQLBindable)?]) throws -> Int

    /// Runs an `INSERT` into a table whose key the database numbers, now; returns the number
    /// it gave the row.
    func insert(_ sql: String, _ values: [(any SQLBindable)?]) throws -> Int64

    /// Takes the lock named `name` until the transaction ends, as `locking` says; for what has
    /// no row to lock (a device's count, an app's key, a token's holder). Nothing on a reader.
    func lock(_ name: String) throws

    /// The clause that locks the rows a statement selects (of the table `alias` names, in a
    /// join), as `locking` says; with `.nowait` the rows another transaction holds are left
    /// out, and the caller tells them from rows that are not there.
    func rowLock(of alias: String?) -> String

    /// The clause that locks every row a statement selects, or fails if one is held.
    func rowsLock() throws -> String
}

extension SQLSession {
    /// Whether this is a write transaction whose reads lock what they read.
    public var writing: Bool { locking != .none }

    /// The rows of a statement, each read by `read`.
    public func rows<T>(_ sql: String, _ values: [(any SQLBindable)?] = [], _ read: (any SQLRow) throws -> T) throws -> [T] {
        try rows(sql, values, reading: nil, read)
    }

    /// The first row of a statement, if any, read by `read`.
    public func row<T>(_ sql: String, _ values: [(any SQLBindable)?] = [], _ read: (any SQLRow) throws -> T) throws -> T? {
        try rows(sql, values, reading: nil, read).first
    }

    /// The first column of every row.
    public func values<T: SQLColumn>(_ sql: String, _ values: [(any SQLBindable)?] = [], as type: T.Type = T.self) throws -> [T] {
        try rows(sql, values, reading: nil) { row in try T.read(0, from: row) }
    }

    /// The first column of the first row, if there is a row.
    public func value<T: SQLColumn>(_ sql: String, _ values: [(any SQLBindable)?] = [], as type: T.Type = T.self) throws -> T? {
        try self.values(sql, values, as: T.self).first
    }

    /// The clause that locks the rows a statement selects, skipping those another transaction
    /// holds: due work that several writers claim at once, each taking different rows.
    public var skipLocked: String { writing ? " FOR UPDATE SKIP LOCKED" : "" }
}

/// How a write transaction's reads lock what they read (docs/cluster.md, "Isolation").
public enum Locking: Sendable {
    /// Not at all: a reader, or SQLite's single writer.
    case none
    /// At once or not at all: a batch never waits for a lock, so batches cannot deadlock; a
    /// change that meets a lock another transaction holds is undone and run again.
    case nowait
    /// Waiting: a change run alone after meeting held locks.
    case wait
}

/// A lock another transaction holds: the change is undone and run again.
public struct SQLBusy: Error, CustomStringConvertible {
    public let what: String
    public init(what: String) { self.what = what }
    public var description: String { "\(what) is being changed by another transaction" }
}

/// What a write transaction keeps of the rows it read that change rarely.
public struct TransactionCache {
    /// Activity types by app and name, `nil` for one that is not registered.
    public var activityTypes: [String: ActivityType?] = [:]
    /// Activities' phone state, read with the activity (under its lock), `nil` for none.
    public var phoneActivities: [ActivityID: PhoneActivity?] = [:]
    /// Activities read under their lock, or written, in this transaction: as they now are.
    public var activities: [ActivityID: Activity] = [:]

    public init() {}

    /// An activity type's key.
    static func typeKey(bundleId: BundleID, name: String) -> String { "\(bundleId)\u{0}\(name)" }
}
