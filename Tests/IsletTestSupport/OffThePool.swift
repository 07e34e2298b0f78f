import Foundation

/// Runs blocking work — reading a pipe to its end, waiting for a process, a blocking `recv` — on
/// a thread of its own, never on Swift concurrency's cooperative pool. On a two-core machine the
/// pool has two threads: two tests blocking one each starve every other task, the in-process
/// server and the watchdogs that would end the wait included, and the whole run hangs.
public func offThePool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: body()) }.start()
    }
}
