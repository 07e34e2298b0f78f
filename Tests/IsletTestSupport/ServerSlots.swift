import Foundation

/// Bounds how many servers the tests of one process run at once. Swift Testing starts every
/// test of a suite that is not serialized at once: with a server each, the server tests ran
/// about 140 servers together on two cores, and with both cores busy beside the suite their
/// requests waited past their clients' 60-second timeouts (the APNs tests' "StreamClosed …
/// Cancel"). A test waits for a slot before its server starts, so a test's own deadlines start
/// with its server. A test that already holds one (a server started inside another's body)
/// takes no other: nested servers could otherwise wait for one another forever.
public final class ServerSlots: Sendable {
    /// Four servers per core.
    public static let shared = ServerSlots(ProcessInfo.processInfo.activeProcessorCount * 4)

    @TaskLocal static var holding = false

    private let gate: Gate

    init(_ count: Int) {
        gate = Gate(free: max(2, count))
    }

    /// Runs `body` once a slot is free (at once, when this task holds one already).
    public func run<T>(_ body: () async throws -> T) async throws -> T {
        if Self.holding { return try await body() }
        await gate.acquire()
        do {
            let result = try await Self.$holding.withValue(true) { try await body() }
            await gate.release()
            return result
        } catch {
            await gate.release()
            throw error
        }
    }

    private actor Gate {
        var free: Int
        var waiting: [CheckedContinuation<Void, Never>] = []

        init(free: Int) {
            self.free = free
        }

        func acquire() async {
            if free > 0 {
                free -= 1
                return
            }
            await withCheckedContinuation { waiting.append($0) }
        }

        func release() {
            if waiting.isEmpty {
                free += 1
            } else {
                waiting.removeFirst().resume()
            }
        }
    }
}
