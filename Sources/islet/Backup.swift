import ArgumentParser
import Foundation
import IsletCore
import IsletServer
import IsletStore

/// `islet backup`: a consistent copy of a node's SQLite database, taken while it runs.
struct Backup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Copy a node's SQLite database while it runs: every change committed when the copy starts.",
        discussion: """
            Run it on the node's machine; the node goes on taking changes meanwhile. The copy is \
            checked and never overwrites a file. For PostgreSQL, use pg_dump (docs/operations.md).
            """
    )

    @Argument(help: "The new file to write.")
    var file: String

    @OptionGroup var data: NodeDataDirectory

    func run() async throws {
        let database = data.database
        do {
            let summary = try SQLiteBackup.backup(from: database, to: file)
            print("Backed up \(database) to \(file): events up to #\(summary.lastEventId), \(summary.activities) activities, \(summary.deliveries) deliveries (schema \(summary.migration)).")
        } catch let error as IsletError {
            throw CommandFailure(error.message)
        }
    }
}

/// `islet restore`: a backup put back into a stopped node's data directory.
struct Restore: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Put a backup in place of a stopped node's database (the one there is kept beside it).",
        discussion: """
            The node must be stopped: a running one holds its data directory, and the restore is \
            refused. Deliveries that were unfinished at the backup are sent again when the node \
            starts (a phone ignores a change older than one it has).
            """
    )

    @Argument(help: "The backup to restore (made by islet backup).")
    var file: String

    @OptionGroup var data: NodeDataDirectory

    func run() async throws {
        let directory = data.path
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            // Held until the restore is done: a node cannot start on the directory meanwhile.
            let lock = try DataDirectoryLock(directory: directory)
            let (summary, kept) = try SQLiteBackup.restore(file, to: data.database)
            withExtendedLifetime(lock) {}
            print("Restored \(file) into \(directory): events up to #\(summary.lastEventId), \(summary.activities) activities, \(summary.deliveries) deliveries.")
            if let kept { print("The database it replaced is kept at \(kept).") }
        } catch let error as IsletError {
            throw CommandFailure(error.reason == .unavailable ? "\(error.message) A restore needs the node stopped." : error.message)
        }
    }
}

/// The data directory of a node on this machine, for the commands that work on its files.
struct NodeDataDirectory: ParsableArguments {
    @Option(name: .customLong("data"), help: "The node's data directory (default ./.islet; env ISLET_STORE_DATA_DIRECTORY).")
    var dataDirectory: String?

    var path: String { dataDirectory ?? ProcessInfo.processInfo.environment["ISLET_STORE_DATA_DIRECTORY"] ?? ".islet" }

    /// Its SQLite database.
    var database: String { (path as NSString).appendingPathComponent("islet.sqlite") }
}
