import Foundation
import Synchronization

/// Wakes a sleeping timer loop early when a deadline earlier than the one it sleeps towards
/// appears: the scheduler sleeps to the next stored deadline, and new activities can bring
/// nearer ones.
final class WakeSignal: Sendable {
    private struct State {
        var target: Date?
        var waiter: CheckedContinuation<Void, Never>?
        var pending = false
        var cancelled = false
    }

    private let state = Mutex(State())

    /// Wakes the sleeper if `deadline` comes before the time it sleeps towards; one not sleeping
    /// (or on its way to sleep, or just woken) returns from its next sleep at once: no
    /// notification is lost between two sleeps.
    func notify(deadline: Date) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if let target = state.target, target <= deadline { return nil }
            guard let waiter = state.waiter else {
                state.pending = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Sleeps on `clock` until `target` (or indefinitely when `nil`), or until `notify` brings
    /// an earlier deadline, or until cancelled.
    func sleep(until target: Date?, on clock: any WallClock) async {
        state.withLock { state in
            state.target = target
        }
        await withTaskGroup(of: Void.self) { group in
            if let target {
                group.addTask { try? await clock.sleep(until: target) }
            }
            group.addTask { await self.waitForNotification() }
            await group.next()
            group.cancelAll()
        }
        // A notification that came as it woke stays pending for the next sleep.
        state.withLock { state in
            state.target = nil
            state.cancelled = false
        }
    }

    private func waitForNotification() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.pending {
                        state.pending = false
                        return true
                    }
                    if state.cancelled || Task.isCancelled { return true }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                state.cancelled = true
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }
    }
}
