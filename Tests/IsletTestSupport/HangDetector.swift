import Foundation
import Synchronization
import Testing

extension Trait where Self == HangDetector {
    /// A test's time limit: a hang detector, never a speed check. Ten minutes, which a test that
    /// works does not reach even with both cores kept busy beside the suite (a test of the real
    /// programs takes up to four times as long then); one that hangs fails instead of holding
    /// the run.
    public static var hangDetector: Self { HangDetector(limit: .seconds(600), grace: .seconds(120)) }
}

/// A time limit that cannot be outwaited. Swift Testing's `.timeLimit` records an issue and
/// cancels the test, then waits for it to end: a test stuck where cancellation does not reach
/// (a continuation never resumed, a server's shutdown that waits for a client) held a CI run
/// until CI's own limit, which printed nothing. This one does what `.timeLimit` does, and if
/// the test has still not ended `grace` after it, says which test and ends the test process: a
/// failed run that names its hang, rather than one that never ends.
public struct HangDetector: TestTrait, SuiteTrait, TestScoping {
    public let limit: Duration
    public let grace: Duration

    public init(limit: Duration, grace: Duration) {
        self.limit = limit
        self.grace = grace
    }

    public var isRecursive: Bool { true }

    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        // Each test case on its own, as `.timeLimit`; a suite is its tests.
        testCase == nil ? nil : self
    }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        let name = "\(test.name) (\(test.sourceLocation.fileName):\(test.sourceLocation.line))"
        let alarm = Watchdog.shared.arm(after: limit + grace) {
            "Test \(name) did not end \(grace) after its time limit of \(limit), though it was cancelled then: the test process ends here, so that the run does not hang."
        }
        defer { Watchdog.shared.disarm(alarm) }
        try await withoutActuallyEscaping(function) { function in
            try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask {
                    try await function()
                    return true
                }
                group.addTask {
                    try await Task.sleep(for: limit)
                    return false
                }
                defer { group.cancelAll() }
                if try await group.next() == false {
                    Issue.record(
                        "Time limit was exceeded: \(limit). The test is cancelled; if it has not ended \(grace) later, the test process ends.",
                        sourceLocation: test.sourceLocation
                    )
                }
            }
        }
    }
}

/// One thread that ends the process when an armed alarm is due, whatever the tasks and their
/// threads are doing (a hang may hold every thread of Swift's cooperative pool).
final class Watchdog: Sendable {
    static let shared = Watchdog()

    private let alarms = Mutex<[UInt64: (due: ContinuousClock.Instant, message: @Sendable () -> String)]>([:])
    private let nextAlarm = Atomic<UInt64>(0)

    private init() {
        let thread = Thread { [self] in
            while true {
                Thread.sleep(forTimeInterval: 1)
                let now = ContinuousClock.now
                if let due = alarms.withLock({ $0.values.first { $0.due <= now } }) {
                    FileHandle.standardError.write(Data("\n\(due.message())\n".utf8))
                    _exit(70)
                }
            }
        }
        thread.name = "islet-test-watchdog"
        thread.start()
    }

    func arm(after duration: Duration, message: @escaping @Sendable () -> String) -> UInt64 {
        let id = nextAlarm.add(1, ordering: .relaxed).newValue
        alarms.withLock { $0[id] = (ContinuousClock.now + duration, message) }
        return id
    }

    func disarm(_ id: UInt64) {
        _ = alarms.withLock { $0.removeValue(forKey: id) }
    }
}
