import IsletEngine
import NIOCore
import Synchronization

/// Cuts off the connection of a stream whose reader stopped reading. Such a reader blocks the
/// server's writes; closing the connection fails the blocked write, frees the connection and
/// lets graceful shutdown finish.
///
/// Two cases: a single write that has not completed within `writeTimeout`; and a stream told to
/// end (overflow, shutdown) that has not ended within `endGrace`.
///
/// A write only notes when it began: scheduling and cancelling a timer for every write was a
/// tenth of the server's work in a fan-out to 10,000 streams. One check per stream is armed
/// while it writes; when it runs it closes the connection if the write in progress is
/// `writeTimeout` old, or comes back when it would be, or rests until the next write.
final class StalledStreamGuard: Sendable {
    private struct State {
        /// When the write in progress began; `nil` between writes.
        var writeBegan: NIODeadline?
        var writeCheck: Scheduled<Void>?
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
            guard reason != .cancelled else { return }
            let channel = self.channel
            state.withLock { state in
                guard !state.ended, state.endTimer == nil else { return }
                state.endTimer = channel.eventLoop.scheduleTask(in: endGrace) { channel.close(promise: nil) }
            }
        }
    }

    /// Runs one write under the write timeout.
    func write(_ body: () async throws -> Void) async throws {
        let began = NIODeadline.now()
        state.withLock { state in
            state.writeBegan = began
            if state.writeCheck == nil { armWriteCheck(at: began + writeTimeout, in: &state) }
        }
        defer { state.withLock { $0.writeBegan = nil } }
        try await body()
    }

    /// The stream finished on its own: no cut-off.
    func streamEnded() {
        state.withLock { state in
            state.ended = true
            state.writeCheck?.cancel()
            state.endTimer?.cancel()
        }
    }

    private func armWriteCheck(at deadline: NIODeadline, in state: inout State) {
        guard !state.ended else { return }
        state.writeCheck = channel.eventLoop.scheduleTask(deadline: deadline) { [weak self] in self?.checkWrite() }
    }

    /// Closes the connection if the write in progress has taken `writeTimeout`; otherwise checks
    /// again when it would have, or rests until the next write.
    private func checkWrite() {
        let now = NIODeadline.now()
        let stalled = state.withLock { state -> Bool in
            state.writeCheck = nil
            guard let began = state.writeBegan else { return false }
            if now >= began + writeTimeout { return true }
            armWriteCheck(at: began + writeTimeout, in: &state)
            return false
        }
        if stalled { channel.close(promise: nil) }
    }
}
