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

    private let connection: DatabaseQueue
    private let sinceLast = Mutex(0)
    private let due: AsyncStream<Void>
    private let signal: AsyncStream<Void>.Continuation

    /// Opens the checkpointing connection to the database at `path` (already in WAL mode).
    init(path: String, configuration: Configuration) throws {
        connection = try DatabaseQueue(path: path, configuration: configuration)
        // One pending signal at most: checkpoints asked for while one runs are the same checkpoint.
        (due, signal) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// The writer committed a transaction: asks for a checkpoint when one is due. Never waits.
    func committed() {
        let isDue = sinceLast.withLock { count in
            count += 1
            guard count >= Self.interval else { return false }
            count = 0
            return true
        }
        if isDue { signal.yield() }
    }

    /// Runs the checkpoints asked for until `stop()`.
    func run() async {
        for await _ in due {
            // A failed checkpoint leaves the log to the next one (or to SQLite's backstop).
            _ = try? await connection.writeWithoutTransaction { db in try db.checkpoint(.passive) }
        }
    }

    /// Ends `run` after the checkpoint under way, if any.
    func stop() {
        signal.finish()
    }
}
