import Dispatch
import IsletCore
import Synchronization

/// Changes waiting for a store's writer, taken a batch at a time: what group commit is built on
/// (SQLite's `GroupCommit`, a thread of its own; PostgreSQL's writer lanes, tasks). A writer that
/// finds it empty sleeps until a change comes or the queue stops.
public final class WriteQueue<Job: Sendable>: Sendable {
    private struct State {
        var jobs: [Job] = []
        var writers: [CheckedContinuation<Void, Never>] = []
        /// A writer thread waits (`nextBatchOnThread`).
        var threadWaiting = false
        var stopped = false
        var batches = 0
    }

    /// Changes per batch, at most: keeps one transaction (and the callers it holds) short.
    public let maximumBatch: Int
    private let state = Mutex(State())
    private let threadWake = DispatchSemaphore(value: 0)

    public init(maximumBatch: Int) {
        self.maximumBatch = maximumBatch
    }

    /// Batches taken so far.
    public var batches: Int { state.withLock { $0.batches } }

    /// Queues a change; `false` once the queue has stopped (nothing will run it).
    public func enqueue(_ job: Job) -> Bool {
        let (accepted, writer) = state.withLock { state -> (Bool, CheckedContinuation<Void, Never>?) in
            guard !state.stopped else { return (false, nil) }
            state.jobs.append(job)
            if state.threadWaiting {
                state.threadWaiting = false
                threadWake.signal()
            }
            return (true, state.writers.isEmpty ? nil : state.writers.removeFirst())
        }
        writer?.resume()
        return accepted
    }

    /// Takes every change waiting, for a writer that cannot run them (the storage is gone) to
    /// answer them at once rather than one batch at a time.
    public func drain() -> [Job] {
        state.withLock { state in
            defer { state.jobs = [] }
            return state.jobs
        }
    }

    /// Takes no more changes; writers finish those waiting, then `nextBatch` returns `nil`.
    public func stop() {
        let writers = state.withLock { state in
            state.stopped = true
            if state.threadWaiting {
                state.threadWaiting = false
                threadWake.signal()
            }
            defer { state.writers = [] }
            return state.writers
        }
        for writer in writers { writer.resume() }
    }

    /// `nextBatch` for a writer with a thread of its own: blocks the thread until a change comes.
    public func nextBatchOnThread() -> [Job]? {
        while true {
            let batch = state.withLock { state -> [Job]?? in
                let batch = Self.take(&state, upTo: maximumBatch)
                if batch == nil { state.threadWaiting = true }
                return batch
            }
            if let batch { return batch }
            threadWake.wait()
        }
    }

    /// The changes waiting (up to `maximumBatch`), waiting for one; `nil` once stopped and drained.
    public func nextBatch() async -> [Job]? {
        while true {
            if let batch = state.withLock({ Self.take(&$0, upTo: maximumBatch) }) { return batch }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { state -> Bool in
                    if !state.jobs.isEmpty || state.stopped { return true }
                    state.writers.append(continuation)
                    return false
                }
                if ready { continuation.resume() }
            }
        }
    }

    /// The next batch, or `.some(nil)` once stopped and drained; `nil` when a writer must wait.
    private static func take(_ state: inout State, upTo maximumBatch: Int) -> [Job]?? {
        guard !state.jobs.isEmpty else { return state.stopped ? .some(nil) : .none }
        let batch = Array(state.jobs.prefix(maximumBatch))
        state.jobs.removeFirst(batch.count)
        state.batches += 1
        return .some(batch)
    }
}

/// A change's result, set on the writer and read after its transaction: the transaction's end
/// orders the two.
public final class WriteOutcome<T: Sendable>: @unchecked Sendable {
    public var result: Result<T, any Error>?

    public init() {}

    /// The error the change itself failed with, if it did.
    public var failure: (any Error)? {
        if case .failure(let error) = result { error } else { nil }
    }

    /// Answers the caller once the transaction has ended: with the change's value and the
    /// commit's number, or the change's own error, or the error that undid the transaction.
    public func answer(_ continuation: CheckedContinuation<Committed<T>, any Error>, transaction: Result<UInt64, any Error>) {
        answer({ continuation.resume(with: $0) }, transaction: transaction)
    }

    /// `answer`, to a completion rather than a waiting task (a route served on its event loop).
    public func answer(_ completion: (Result<Committed<T>, any Error>) -> Void, transaction: Result<UInt64, any Error>) {
        switch (transaction, result) {
        case (.failure(let error), _), (.success, .failure(let error)?):
            completion(.failure(error))
        case (.success(let number), .success(let value)?):
            completion(.success(Committed(value: value, commit: number)))
        case (.success, nil):
            completion(.failure(IsletError(.internalError, "A change was never run.")))
        }
    }
}
