import Foundation
import Synchronization

/// The time source the engine and its timers read: the system clock in production, a hand-moved
/// clock in tests, so no test sleeps to wait for a rule.
public protocol WallClock: Sendable {
    /// The current time.
    func now() -> Date
    /// Suspends until the clock reads `deadline` or later, or earlier — callers re-read the
    /// time and sleep again — and throws `CancellationError` when cancelled. Any `Date` is
    /// accepted, however far away: a stored deadline must never stop the timers.
    func sleep(until deadline: Date) async throws
}

/// The system's wall clock.
public struct SystemClock: WallClock {
    /// Creates the system clock.
    public init() {}

    public func now() -> Date { Date() }

    /// The longest single sleep. `Duration` traps on spans beyond about 10^20 seconds, and a
    /// far deadline (a row stored before dates were checked, say) would otherwise trap on every
    /// start; the caller's loop sleeps again instead.
    public static let longestSleep: TimeInterval = 3600

    public func sleep(until deadline: Date) async throws {
        let seconds = deadline.timeIntervalSinceNow
        if seconds > 0 {
            try await Task.sleep(for: .seconds(min(seconds, Self.longestSleep)))
        }
        try Task.checkCancellation()
    }
}

/// A clock that moves only when told: tests set the time and sleepers wake when it passes
/// their deadline.
public final class ManualClock: WallClock {
    private struct Sleeper {
        let deadline: Date
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: Date
        var sleepers: [UInt64: Sleeper] = [:]
        var nextID: UInt64 = 0
    }

    private let state: Mutex<State>

    /// Creates a clock that reads `now`.
    public init(now: Date) {
        state = Mutex(State(now: now))
    }

    public func now() -> Date { state.withLock { $0.now } }

    /// Moves the clock forward by `seconds` and wakes every sleeper whose deadline has come.
    public func advance(by seconds: TimeInterval) {
        set(now().addingTimeInterval(seconds))
    }

    /// Sets the clock to `date` and wakes every sleeper whose deadline has come.
    public func set(_ date: Date) {
        let due = state.withLock { state -> [Sleeper] in
            state.now = date
            let due = state.sleepers.filter { $0.value.deadline <= date }
            for id in due.keys { state.sleepers[id] = nil }
            return Array(due.values)
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    public func sleep(until deadline: Date) async throws {
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resumeNow: (any Error)?? = state.withLock { state in
                    if Task.isCancelled { return .some(CancellationError()) }
                    if deadline <= state.now { return .some(nil) }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return .none
                }
                switch resumeNow {
                case .some(.some(let error)): continuation.resume(throwing: error)
                case .some(.none): continuation.resume()
                case .none: break
                }
            }
        } onCancel: {
            let sleeper = state.withLock { $0.sleepers.removeValue(forKey: id) }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }
}
