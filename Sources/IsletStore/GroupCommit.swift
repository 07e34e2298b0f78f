import Foundation
import GRDB
import IsletCore
import Synchronization

/// Group commit: changes that arrive while a transaction is open wait for it, then run together
/// in the next one, each in its own savepoint. A busy server so commits — and waits for the
/// disk — once per batch rather than once per change, and each caller still returns only after
/// the transaction holding its change has committed (or with its own error, its savepoint
/// rolled back, the others unaffected).
///
/// Committed events go to `publish` from the writer, in commit order, before the next batch runs.
final class GroupCommit: Sendable {
    /// One caller's change, waiting for a transaction.
    private struct Job: Sendable {
        /// Runs the change in its own savepoint; returns the events it recorded (none if it failed).
        let run: @Sendable (Database) -> [EncodedEvent]
        /// Called once, after the transaction: with `nil` when it committed, or the error that undid it.
        let finish: @Sendable ((any Error)?) -> Void
        /// The error the change itself failed with, if it did (read after `run`).
        let failure: @Sendable () -> (any Error)?
    }

    private struct Queue {
        var jobs: [Job] = []
        var isDraining = false
        var transactions = 0
    }

    /// Changes per transaction, at most: keeps one transaction (and the callers it holds) short.
    static let maximumBatch = 256

    private let pool: DatabasePool
    private let publish: @Sendable ([EncodedEvent]) -> Void
    private let committed: @Sendable () -> Void
    private let queue = Mutex(Queue())

    /// - Parameters:
    ///   - publish: Receives each transaction's events, from the writer, once it has committed.
    ///   - committed: Told after each transaction that committed (the checkpointer counts them).
    init(pool: DatabasePool, publish: @escaping @Sendable ([EncodedEvent]) -> Void, committed: @escaping @Sendable () -> Void = {}) {
        self.pool = pool
        self.publish = publish
        self.committed = committed
    }

    /// Runs `body` in the next transaction and returns its value once that has committed.
    func write<T: Sendable>(now: Date, _ body: @escaping @Sendable (Database, inout EventLog) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let outcome = Outcome<T>()
            enqueue(Job(
                run: { db in
                    var log = EventLog(now: now)
                    do {
                        try db.inSavepoint {
                            outcome.result = .success(try body(db, &log))
                            return .commit
                        }
                        return log.events
                    } catch {
                        outcome.result = .failure(error)
                        return []
                    }
                },
                finish: { transactionError in
                    if let transactionError {
                        continuation.resume(throwing: transactionError)
                    } else {
                        continuation.resume(with: outcome.result!)
                    }
                },
                failure: {
                    if case .failure(let error) = outcome.result { error } else { nil }
                }
            ))
        }
    }

    /// Transactions run so far (each holding one or more changes).
    var transactions: Int { queue.withLock { $0.transactions } }

    private func enqueue(_ job: Job) {
        let startsDrain = queue.withLock { queue in
            queue.jobs.append(job)
            defer { queue.isDraining = true }
            return !queue.isDraining
        }
        if startsDrain {
            Task { await drain() }
        }
    }

    /// Runs batches until no change is waiting.
    private func drain() async {
        while let batch = nextBatch() {
            let publish = self.publish
            do {
                try await pool.write { db in
                    let events = batch.flatMap { job in job.run(db) }
                    if !events.isEmpty {
                        db.afterNextTransaction { _ in publish(events) }
                    }
                }
                committed()
                for job in batch { job.finish(nil) }
            } catch {
                // Some failures (a full disk, an I/O error) make SQLite roll the whole transaction
                // back, and the commit then fails as "aborted": every change in the batch is
                // told the cause, the change that met it first.
                let cause = batch.lazy.compactMap { $0.failure() }.first { WriteHealth.storageFailure($0) != nil } ?? error
                for job in batch { job.finish(cause) }
            }
        }
    }

    /// The changes waiting (up to `maximumBatch`), or `nil` — and draining stops — when there are none.
    private func nextBatch() -> [Job]? {
        queue.withLock { queue in
            guard !queue.jobs.isEmpty else {
                queue.isDraining = false
                return nil
            }
            let batch = Array(queue.jobs.prefix(Self.maximumBatch))
            queue.jobs.removeFirst(batch.count)
            queue.transactions += 1
            return batch
        }
    }
}

/// A change's result, set on the writer and read after its transaction: the transaction's end
/// orders the two.
private final class Outcome<T>: @unchecked Sendable {
    var result: Result<T, any Error>?
}
