import Foundation
import GRDB
import Synchronization

/// Copies the write-ahead log back into the database file away from the writer.
///
/// SQLite's own checkpoint runs inside the commit that crosses its threshold (1,000 pages), so
/// every few hundred changes one caller — and every change batched behind it — waited for the
/// whole copy and its sync: the tail of the update → display latency. Here the writer only
/// counts its transactions; every `interval` of them a passive checkpoint runs on a connection
/// of its own, which never blocks a writer. SQLite's automatic checkpoint stays on, at a far
/// higher threshold, as the backstop should these ever fall behind.
final class Checkpointer: Sendable {
    /// Transactions between background checkpoints.
    static let interval = 100
    /// SQLite's automatic checkpoint threshold (pages), left as a backstop: under a steady
    /// stream of writes the log restarts only once a checkpoint has caught up, so it can reach
    /// this size (40 MB) before shrinking back to `logSizeLimit`.
    static let backstopPages = 10_000
    /// Bytes the log file is truncated to when it restarts.
    static let logSizeLimit = 8 << 20

    private struct State {
        var sinceLast = 0
        var isRunning = false
    }

    private let connection: DatabaseQueue
    private let state = Mutex(State())

    /// Opens the checkpointing connection to the database at `path` (already in WAL mode).
    init(path: String, configuration: Configuration) throws {
        connection = try DatabaseQueue(path: path, configuration: configuration)
    }

    /// The writer committed a transaction: starts a checkpoint when one is due and none runs.
    func committed() {
        let starts = state.withLock { state in
            state.sinceLast += 1
            guard state.sinceLast >= Self.interval, !state.isRunning else { return false }
            state.sinceLast = 0
            state.isRunning = true
            return true
        }
        guard starts else { return }
        Task.detached(priority: .utility) {
            // A failed checkpoint leaves the log to the next one (or to SQLite's backstop).
            _ = try? await self.connection.writeWithoutTransaction { db in try db.checkpoint(.passive) }
            self.state.withLock { $0.isRunning = false }
        }
    }
}
