import Foundation
import GRDB
import IsletCore
import IsletEngine

/// Group commit: changes that arrive while a transaction is open wait for it, then run together
/// in the next one, each in its own savepoint. A busy server so commits — and waits for the
/// disk — once per batch rather than once per change, and each caller still returns only after
/// the transaction holding its change has committed (or with its own error, its savepoint
/// rolled back, the others unaffected).
///
/// The writer is a loop (`run`), one of the store's services: it takes the waiting changes,
/// runs them, appends the transaction's `Commit` to the log — which never waits — and takes the
/// next batch. Publishing is the engine's, off this loop.
final class GroupCommit: Sendable {
    /// One caller's change, waiting for a transaction.
    private struct Job: Sendable {
        /// Runs the change in its own savepoint; adds what it did to the commit (nothing if it failed).
        let run: @Sendable (Database, inout Commit) -> Void
        /// Called once, after the transaction: with the commit's number, or the error that undid it.
        let finish: @Sendable (Result<UInt64, any Error>) -> Void
        /// The error the change itself failed with, if it did (read after `run`).
        let failure: @Sendable () -> (any Error)?
    }

    /// Changes per transaction, at most: keeps one transaction (and the callers it holds) short.
    static let maximumBatch = 256

    private let pool: DatabasePool
    private let log: CommitLog
    private let committed: @Sendable () -> Void
    private let queue = WriteQueue<Job>(maximumBatch: maximumBatch)

    /// - Parameters:
    ///   - log: Receives each transaction's `Commit`, from the writer, once it has committed.
    ///   - committed: Told after each transaction that committed (the checkpointer counts them).
    init(pool: DatabasePool, log: CommitLog, committed: @escaping @Sendable () -> Void = {}) {
        self.pool = pool
        self.log = log
        self.committed = committed
    }

    /// Runs `work` in the next transaction and returns its value once that has committed.
    func write<T: Sendable>(now: Date, _ work: @escaping @Sendable (any Transaction) throws -> T) async throws -> Committed<T> {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Committed<T>, any Error>) in
            submit(now: now, work) { continuation.resume(with: $0) }
        }
    }

    /// `write`, answering `completion` (on the thread that publishes the commit) instead of a task.
    func submit<T: Sendable>(
        now: Date, _ work: @escaping @Sendable (any Transaction) throws -> T, completion: @escaping @Sendable (Result<Committed<T>, any Error>) -> Void
    ) {
        do {
            let outcome = WriteOutcome<T>()
            enqueue(Job(
                run: { db, commit in
                    let transaction = SQLiteTransaction(db: db, now: now)
                    do {
                        try db.inSavepoint {
                            outcome.result = .success(try work(transaction))
                            return .commit
                        }
                        commit.add(events: transaction.events, deadline: transaction.earliestDeadline, effects: transaction.effects)
                    } catch {
                        outcome.result = .failure(error)
                    }
                },
                finish: { transaction in outcome.answer(completion, transaction: transaction) },
                failure: { outcome.failure }
            ))
        }
    }

    /// Transactions run so far (each holding one or more changes).
    var transactions: Int { queue.batches }

    private func enqueue(_ job: Job) {
        guard queue.enqueue(job) else {
            return job.finish(.failure(IsletError(.unavailable, "The server is shutting down; nothing was changed.")))
        }
    }

    /// Runs batches until `stop()`, then those still waiting, and returns. The writer is a thread
    /// of its own, not a task: it waits for changes, runs each batch's transaction synchronously
    /// (GRDB's writer, without an async hop to its queue and back), and hands the commit to the
    /// log with the batch's callers, whom the fan-out answers once the commit is published —
    /// one hand-off in, one per batch out (docs/engine.md §8).
    func run() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let thread = Thread { [self] in
                runBatches()
                done.resume()
            }
            thread.name = "islet.writer"
            // As a worker of Dispatch's has (a transaction decodes and encodes deep JSON).
            thread.stackSize = 8 << 20
            thread.start()
        }
    }

    private func runBatches() {
        while let batch = queue.nextBatchOnThread() {
            do {
                let commit = try pool.write { db in
                    var commit = Commit()
                    for job in batch { job.run(db, &commit) }
                    return commit
                }
                committed()
                log.append(commit) { number in for job in batch { job.finish(.success(number)) } }
            } catch {
                // Some failures (a full disk, an I/O error) make SQLite roll the whole transaction
                // back, and the commit then fails as "aborted": every change in the batch is
                // told the cause, the change that met it first.
                let cause = batch.lazy.compactMap { $0.failure() }.first { SQLiteFailure.storageFailure($0) != nil } ?? error
                for job in batch { job.finish(.failure(cause)) }
            }
        }
    }

    /// Ends `run` once the changes already waiting have run; later ones are refused as `unavailable`.
    func stop() {
        queue.stop()
    }
}
