import Foundation
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
    return try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else {
            throw TimedOut(seconds: seconds)
        }
        return value
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

extension Trait where Self == TimeLimitTrait {
    /// A test's time limit: a hang detector, never a speed check. Ten minutes, which a test that
    /// works does not reach even with both cores kept busy beside the suite (a test of the real
    /// programs takes up to four times as long then); one that hangs fails instead of holding
    /// the run.
    public static var hangDetector: Self { .timeLimit(.minutes(10)) }
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
