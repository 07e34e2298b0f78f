import Foundation
import GRDB
import IsletCore

/// Online backups of an SQLite node, and their restore (docs/operations.md, "Backups").
///
/// A backup is SQLite's backup API on a connection of its own to the node's file: in WAL mode it
/// reads one snapshot — every transaction committed when it starts, none after — while the node
/// goes on writing, blocking no writer. The copy is checked (`integrity_check`) and counted
/// before it is called done.
public enum SQLiteBackup {
    /// What a backup or a file to restore holds.
    public struct Summary: Sendable, Equatable {
        /// The newest event's id: every change up to it is in the copy.
        public var lastEventId: Int64
        public var activities: Int
        public var deliveries: Int
        /// The schema's newest migration.
        public var migration: String
    }

    /// Copies the database at `source` to `destination`, a new file (an existing one is never
    /// overwritten), readable by its owner only — it holds delivery credentials' keys.
    public static func backup(from source: String, to destination: String) throws -> Summary {
        let files = FileManager.default
        guard files.fileExists(atPath: source) else {
            throw IsletError(
                .invalidRequest,
                "There is no database at \(source): is this the node's data directory (--data)? A node on PostgreSQL is backed up with pg_dump (docs/operations.md)."
            )
        }
        guard !files.fileExists(atPath: destination) else {
            throw IsletError(.invalidRequest, "\(destination) exists already; a backup never overwrites a file: name a new one.")
        }
        try copy(from: source, to: destination)
        do {
            return try check(destination)
        } catch {
            try? files.removeItem(atPath: destination)
            throw error
        }
    }

    /// Writes the database at `source` — every transaction committed when the copy starts, in its
    /// main file or still in its write-ahead log — into `destination`, a new file readable by its
    /// owner only, through SQLite's backup API. Nothing is left at `destination` when it fails.
    private static func copy(from source: String, to destination: String) throws {
        let files = FileManager.default
        guard files.createFile(atPath: destination, contents: nil, attributes: [.posixPermissions: 0o600]) else {
            throw IsletError(.invalidRequest, "Cannot create \(destination).")
        }
        do {
            var configuration = Configuration()
            configuration.busyMode = .timeout(10)
            let from = try DatabaseQueue(path: source, configuration: configuration)
            let to = try DatabaseQueue(path: destination)
            try from.backup(to: to)
            try to.close()
            try from.close()
        } catch {
            for suffix in ["", "-wal", "-shm", "-journal"] { try? files.removeItem(atPath: destination + suffix) }
            throw error
        }
    }

    /// Whether `path` is a whole Islet database this code can open: its pages intact, and no
    /// migration it does not know (one written by a newer Islet). Counts what it holds.
    public static func check(_ path: String) throws -> Summary {
        var configuration = Configuration()
        configuration.readonly = true
        let queue: DatabaseQueue
        do {
            queue = try DatabaseQueue(path: path, configuration: configuration)
        } catch {
            throw IsletError(.invalidRequest, "\(path) is not an SQLite database: \(error).")
        }
        defer { try? queue.close() }
        return try queue.read { db in
            let integrity = try String.fetchAll(db, sql: "PRAGMA integrity_check")
            guard integrity == ["ok"] else {
                throw IsletError(.invalidRequest, "\(path) is damaged: \(integrity.prefix(3).joined(separator: "; ")).")
            }
            guard try db.tableExists("grdb_migrations"), try db.tableExists("activity") else {
                throw IsletError(.invalidRequest, "\(path) is an SQLite database, but not an Islet one.")
            }
            try Schema.refuseNewer(db, path: path)
            let applied = try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations")
            return Summary(
                lastEventId: try Int64.fetchOne(db, sql: "SELECT COALESCE(MAX(id), 0) FROM event") ?? 0,
                activities: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM activity") ?? 0,
                deliveries: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM delivery") ?? 0,
                migration: Schema.migrator.migrations.last { applied.contains($0) } ?? "none"
            )
        }
    }

    /// Puts the backup `file` in place of the database at `path`, which no node may have open
    /// (the caller holds the data directory's lock). The database there, if any, is kept beside
    /// it, renamed with the time; its log files go with it.
    ///
    /// The file is copied through SQLite's backup API, not as a file: a database some program
    /// still writes (a live node's own `islet.sqlite`) keeps its newest transactions in its
    /// write-ahead log beside it, which a copy of the main file alone would leave behind.
    /// - Returns: What the restored database holds, read from it, and where the one it replaced went.
    public static func restore(_ file: String, to path: String, now: Date = Date()) throws -> (Summary, kept: String?) {
        _ = try check(file)
        let files = FileManager.default
        let incoming = path + ".restoring"
        for suffix in ["", "-wal", "-shm", "-journal"] { try? files.removeItem(atPath: incoming + suffix) }
        try copy(from: file, to: incoming)
        let summary: Summary
        do {
            summary = try check(incoming)
        } catch {
            try? files.removeItem(atPath: incoming)
            throw error
        }
        var kept: String?
        if files.fileExists(atPath: path) {
            let stamp = ISO8601DateFormatter().string(from: now).replacingOccurrences(of: ":", with: "")
            let aside = path + ".before-restore-" + stamp
            for suffix in ["", "-wal", "-shm"] where files.fileExists(atPath: path + suffix) {
                try files.moveItem(atPath: path + suffix, toPath: aside + suffix)
            }
            kept = aside
        }
        try files.moveItem(atPath: incoming, toPath: path)
        return (summary, kept)
    }
}
