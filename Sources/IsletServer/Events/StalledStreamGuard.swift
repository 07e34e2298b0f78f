import NIOCore
import Synchronization

/// Cuts off the connection of a stream that was told to end but cannot: a reader that stopped
/// reading blocks the server's writes forever, and with them graceful shutdown. Once the
/// stream's subscription ends for overflow or shutdown, the stream has `grace` to finish;
/// after that its connection is closed, which fails the blocked write.
final class StalledStreamGuard: Sendable {
    private let channel: any Channel
    private let grace: TimeAmount
    private let state = Mutex<(timer: Scheduled<Void>?, ended: Bool)>((nil, false))

    init(channel: any Channel, grace: TimeAmount = .seconds(5)) {
        self.channel = channel
        self.grace = grace
    }

    /// Watches `subscription`: when it ends for a reason other than the reader leaving, the
    /// countdown starts.
    func watch(_ subscription: Subscription) {
        subscription.onFinish { [self] reason in
            if reason != .cancelled { startCountdown() }
        }
    }

    /// The stream finished on its own: no cut-off.
    func streamEnded() {
        state.withLock { state in
            state.ended = true
            state.timer?.cancel()
        }
    }

    private func startCountdown() {
        let channel = self.channel
        state.withLock { state in
            guard !state.ended, state.timer == nil else { return }
            state.timer = channel.eventLoop.scheduleTask(in: grace) {
                channel.close(promise: nil)
            }
        }
    }
}
