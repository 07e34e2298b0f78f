import IsletEngine
import NIOCore
import Synchronization

/// Cuts off the connection of a stream whose reader stopped reading. Such a reader blocks the
/// server's writes; closing the connection fails the blocked write, frees the connection and
/// lets graceful shutdown finish.
///
/// Two cases: a single write that has not completed within `writeTimeout`; and a stream told to
/// end (overflow, shutdown) that has not ended within `endGrace`.
final class StalledStreamGuard: Sendable {
    private struct State {
        var writeTimer: Scheduled<Void>?
        var endTimer: Scheduled<Void>?
        var ended = false
    }

    private let channel: any Channel
    private let writeTimeout: TimeAmount
    private let endGrace: TimeAmount
    private let state = Mutex(State())

    init(channel: any Channel, writeTimeout: TimeAmount, endGrace: TimeAmount = .seconds(5)) {
        self.channel = channel
        self.writeTimeout = writeTimeout
        self.endGrace = endGrace
    }

    /// Watches `subscription`: when it ends for a reason other than the reader leaving, the
    /// stream has `endGrace` to finish.
    func watch(_ subscription: Subscription) {
        subscription.onFinish { [self] reason in
            if reason != .cancelled { arm(\.endTimer, after: endGrace) }
        }
    }

    /// Runs one write under the write timeout.
    func write(_ body: () async throws -> Void) async throws {
        arm(\.writeTimer, after: writeTimeout)
        defer { state.withLock { $0.writeTimer?.cancel(); $0.writeTimer = nil } }
        try await body()
    }

    /// The stream finished on its own: no cut-off.
    func streamEnded() {
        state.withLock { state in
            state.ended = true
            state.writeTimer?.cancel()
            state.endTimer?.cancel()
        }
    }

    private func arm(_ timer: WritableKeyPath<State, Scheduled<Void>?>, after delay: TimeAmount) {
        let channel = self.channel
        state.withLock { state in
            guard !state.ended, state[keyPath: timer] == nil else { return }
            state[keyPath: timer] = channel.eventLoop.scheduleTask(in: delay) {
                channel.close(promise: nil)
            }
        }
    }
}
