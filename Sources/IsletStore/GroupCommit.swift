import Foundation
import GRDB
import IsletCore
import IsletEngine
import Synchronization

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

    private struct Queue {
        var jobs: [Job] = []
        var writer: CheckedContinuation<Void, Never>?
        var stopped = false
        var transactions = 0
    }

    /// Changes per transaction, at most: keeps one transaction (and the callers it holds) short.
    static let maximumBatch = 256

    private let pool: DatabasePool
    private let log: CommitLog
    private let committed: @Sendable () -> Void
    private let queue = Mutex(Queue())

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
            let outcome = Outcome<T>()
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
                finish: { transaction in
                    switch (transaction, outcome.result) {
                    case (.failure(let error), _), (.success, .failure(let error)?):
                        continuation.resume(throwing: error)
                    case (.success(let number), .success(let value)?):
                        continuation.resume(returning: Committed(value: value, commit: number))
                    case (.success, nil):
                        continuation.resume(throwing: IsletError(.internalError, "A change was never run."))
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
        let (accepted, writer) = queue.withLock { queue -> (Bool, CheckedContinuation<Void, Never>?) in
            guard !queue.stopped else { return (false, nil) }
            queue.jobs.append(job)
            defer { queue.writer = nil }
            return (true, queue.writer)
        }
        guard accepted else {
            return job.finish(.failure(IsletError(.unavailable, "The server is shutting down; nothing was changed.")))
        }
        writer?.resume()
    }

    /// Runs batches until `stop()`, then those still waiting, and returns.
    func run() async {
        while let batch = await nextBatch() {
            do {
                let commit = try await pool.write { db in
                    var commit = Commit()
                    for job in batch { job.run(db, &commit) }
                    return commit
                }
                committed()
                let number = log.append(commit)
                for job in batch { job.finish(.success(number)) }
            } catch {
                // Some failures (a full disk, an I/O error) make SQLite roll the whole transaction
                // back, and the commit then fails as "aborted": every change in the batch is
                // told the cause, the change that met it first.
                let cause = batch.lazy.compactMap { $0.failure() }.first { WriteHealth.storageFailure($0) != nil } ?? error
                for job in batch { job.finish(.failure(cause)) }
            }
        }
    }

    /// Ends `run` once the changes already waiting have run; later ones are refused as `unavailable`.
    func stop() {
        let writer = queue.withLock { queue in
            queue.stopped = true
            defer { queue.writer = nil }
            return queue.writer
        }
        writer?.resume()
    }

    /// The changes waiting (up to `maximumBatch`), waiting for one; `nil` once stopped and drained.
    private func nextBatch() async -> [Job]? {
        while true {
            let batch = queue.withLock { queue -> [Job]?? in
                if !queue.jobs.isEmpty {
                    let batch = Array(queue.jobs.prefix(Self.maximumBatch))
                    queue.jobs.removeFirst(batch.count)
                    queue.transactions += 1
                    return .some(batch)
                }
                return queue.stopped ? .some(nil) : .none
            }
            if let batch { return batch }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = queue.withLock { queue -> Bool in
                    if !queue.jobs.isEmpty || queue.stopped { return true }
                    queue.writer = continuation
                    return false
                }
                if ready { continuation.resume() }
            }
        }
    }
}

/// A change's result, set on the writer and read after its transaction: the transaction's end
/// orders the two.
private final class Outcome<T>: @unchecked Sendable {
    var result: Result<T, any Error>?
}
