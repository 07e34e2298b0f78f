import Foundation
import Synchronization
import Testing

/// Fails instead of hanging when something that should happen does not, within `seconds` of
/// real time. A guard against a broken build, never a way to wait for a rule.
///
/// A hang detector only: on a loaded machine (both cores busy beside the suite) a test process
/// may get a third of a core, and what takes 1 s alone takes 10. So no wait ends before
/// `hangFloor` (2 minutes), whatever `seconds` says — unless `exactly`, for a wait that is
/// itself the point (giving up on an attempt to make another).
public func within<T: Sendable>(
    _ seconds: Double = hangFloor, exactly: Bool = false, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let seconds = exactly ? seconds : max(seconds, hangFloor)
    // Not a task group: a group ends only once its every task has, so a body that ignores its
    // cancellation (a wait on something that never comes) would hold it past its time. Here the
    // first of the body and the clock gives the answer; the other is cancelled and not waited
    // for. (This wait once held a full run until CI's own limit.)
    let race = Race<T>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
            race.start(continuation, body: body, timeout: seconds)
        }
    } onCancel: {
        race.cancel()
    }
}

/// The body and the clock of one `within`: whichever ends first resumes its continuation, once.
private final class Race<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var tasks: [Task<Void, Never>] = []
        var cancelled = false
    }

    private let state = Mutex(State())

    func start(_ continuation: CheckedContinuation<T, any Error>, body: @escaping @Sendable () async throws -> T, timeout seconds: Double) {
        // The continuation is in place before either task can end.
        let cancelled = state.withLock {
            $0.continuation = continuation
            return $0.cancelled
        }
        guard !cancelled else { return finish(.failure(CancellationError())) }
        let work = Task {
            do {
                self.finish(.success(try await body()))
            } catch {
                self.finish(.failure(error))
            }
        }
        let clock = Task {
            guard (try? await Task.sleep(for: .seconds(seconds))) != nil else { return }
            self.finish(.failure(TimedOut(seconds: seconds)))
        }
        let ended = state.withLock {
            $0.tasks = [work, clock]
            return $0.continuation == nil
        }
        if ended { [work, clock].forEach { $0.cancel() } }
    }

    /// The caller was cancelled: so is the body, and the wait ends with `CancellationError`.
    func cancel() {
        state.withLock { $0.cancelled = true }
        finish(.failure(CancellationError()))
    }

    private func finish(_ result: Result<T, any Error>) {
        let (continuation, tasks) = state.withLock { state in
            defer { state.continuation = nil }
            return (state.continuation, state.tasks)
        }
        guard let continuation else { return }
        tasks.forEach { $0.cancel() }
        continuation.resume(with: result)
    }
}

/// The shortest wait for something that should happen (`within`), in seconds: long enough that
/// only a hang reaches it.
public let hangFloor: Double = 120

/// What `within` throws when time runs out.
public struct TimedOut: Error, CustomStringConvertible {
    public var seconds: Double
    public var description: String { "Nothing happened within \(seconds) s." }
}


/// Polls `condition` every 50 ms until it gives a value, failing after `seconds`.
public func eventually<T>(_ what: String, within seconds: Double = 30, _ condition: () async throws -> T?) async throws -> T {
    // A hang detector, as `within`: never shorter than its floor, however loaded the machine.
    let seconds = max(seconds, hangFloor)
    let deadline = Date().addingTimeInterval(seconds)
    while true {
        if let value = try await condition() { return value }
        guard Date() < deadline else { throw NotWithin(what: what, seconds: seconds) }
        try await Task.sleep(for: .milliseconds(50))
    }
}

public struct NotWithin: Error, CustomStringConvertible {
    public let what: String
    public let seconds: Double
    public var description: String { "\(what): not within \(Int(seconds)) s" }
}

extension Duration {
    /// `store.commitTimeout` in tests not about it: a hang detector, as a test's time limits are.
    /// On a machine with both cores kept busy beside the suite, a shared test server has stalled
    /// a commit past the product's 10 s (docs/cluster.md, "Commits the database holds").
    public static let testCommits: Duration = .seconds(hangFloor)
}
