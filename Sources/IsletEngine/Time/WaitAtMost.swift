import Synchronization

/// Waits for `work` for at most `limit`, then stops waiting.
///
/// For a wait on something outside the process that does not end when its task is cancelled —
/// a library's shutdown that waits for a server's first frame, a name resolution blocking a
/// thread, a commit the database holds — where a task group would wait as long as that does.
/// The work runs in a task of its own; when the time is up, that task is left to end by itself,
/// unobserved, and cancelled unless `cancellingLateWork` is off (work that must run to its end
/// once begun: a commit's bookkeeping).
///
/// - Returns: What the work returned, or `nil` when the time ran out first.
/// - Throws: What the work threw, when it threw in time; `CancellationError` when the waiting
///   task is cancelled.
public func waitAtMost<T: Sendable>(
    _ limit: Duration, cancellingLateWork: Bool = true, _ work: @escaping @Sendable () async throws -> T
) async throws -> T? {
    let race = WaitRace<T>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T?, any Error>) in
            race.begin(continuation)
            let worker = Task {
                do { race.end(.success(try await work())) } catch { race.end(.failure(error)) }
            }
            Task {
                try? await Task.sleep(for: limit)
                if race.end(.success(nil)), cancellingLateWork { worker.cancel() }
            }
        }
    } onCancel: {
        race.end(.failure(CancellationError()))
    }
}

/// `waitAtMost`'s race between the work, the time and a cancellation: the first to `end` answers.
private final class WaitRace<T: Sendable>: Sendable {
    private enum State {
        case waiting
        case begun(CheckedContinuation<T?, any Error>)
        /// Ended before the continuation was there (a cancellation that came first).
        case ended(Result<T?, any Error>)
        case answered
    }

    private let state = Mutex(State.waiting)

    func begin(_ continuation: CheckedContinuation<T?, any Error>) {
        let early = state.withLock { state -> Result<T?, any Error>? in
            if case .ended(let result) = state {
                state = .answered
                return result
            }
            state = .begun(continuation)
            return nil
        }
        if let early { continuation.resume(with: early) }
    }

    /// Answers with `result` unless something answered first; whether it did.
    @discardableResult
    func end(_ result: Result<T?, any Error>) -> Bool {
        let continuation = state.withLock { state -> CheckedContinuation<T?, any Error>?? in
            switch state {
            case .waiting:
                state = .ended(result)
                return .some(nil)
            case .begun(let continuation):
                state = .answered
                return continuation
            case .ended, .answered:
                return nil
            }
        }
        guard let continuation else { return false }
        continuation?.resume(with: result)
        return true
    }
}

/// Runs every close at once and waits for them at most `limit` in all (`waitAtMost`).
///
/// - Returns: How many had not finished when the time ran out.
public func closeAll(within limit: Duration, _ closes: [@Sendable () async -> Void]) async -> Int {
    let finished = Finished()
    _ = try? await waitAtMost(limit) {
        await withDiscardingTaskGroup { group in
            for close in closes {
                group.addTask {
                    await close()
                    finished.count.add(1, ordering: .relaxed)
                }
            }
        }
    }
    return closes.count - finished.count.load(ordering: .relaxed)
}

/// How many of `closeAll`'s closes have finished.
private final class Finished: Sendable {
    let count = Atomic<Int>(0)
}
