import Synchronization

/// Closed until opened once; then everyone waiting, and everyone after, goes on. The delivery
/// sender waits on one until the server answers on its REST port, so that nothing the sender
/// meets can keep an operator from reaching the API.
final class Gate: Sendable {
    private struct State {
        var open: Bool
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var next = 0
    }

    private let state: Mutex<State>

    init(open: Bool) {
        state = Mutex(State(open: open))
    }

    /// How many wait at the gate now.
    var waiting: Int { state.withLock { $0.waiters.count } }

    /// Opens the gate for good.
    func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once the gate is open, or when the task is cancelled (check `Task.isCancelled`).
    func wait() async {
        let id = state.withLock { state in
            defer { state.next += 1 }
            return state.next
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let goNow = state.withLock { state -> Bool in
                    if state.open || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if goNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }
}
