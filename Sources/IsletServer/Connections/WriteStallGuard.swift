import Logging
import NIOCore

/// Closes a connection whose client has stopped taking what the server writes: bytes waiting
/// to be sent, and not one of them taken for `timeout`.
///
/// The request deadlines (`InboundDeadlines`) time what the client owes and stop while the
/// server answers; without this, a client that pipelines requests and never reads would hold its
/// connection — and, with enough of them, the port's whole cap — for ever, its answers stuck in
/// the socket. Progress is what leaves the buffer, not whole writes: a long answer to a slow but
/// steady reader is never cut, and an event stream whose reader reads lives as long as it likes.
///
/// It sits first in the pipeline, nearest the socket, where what is written is bytes; it counts
/// them and asks the channel how many still wait (`ChannelOptions.bufferedWritableBytes`): after
/// each flush, and a few times per `timeout` while some do.
final class WriteStallGuard: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = IOData

    /// How many times per `timeout` a connection with bytes waiting is looked at.
    private static let checksPerTimeout: Int64 = 4

    private let timeout: TimeAmount
    private let limit: String
    private let logger: Logger
    /// Every byte handed to the channel so far.
    private var written = 0
    /// How many of them had been sent at the last check that saw progress, and when.
    private var progress: (sent: Int, at: NIODeadline) = (0, .distantPast)
    private var timer: Scheduled<Void>?

    /// - Parameters:
    ///   - timeout: How long a client may take no byte while some wait.
    ///   - limit: The setting `timeout` comes from, for the log line.
    ///   - logger: Where a closed connection is noted (at debug).
    init(timeout: TimeAmount, limit: String, logger: Logger) {
        self.timeout = timeout
        self.limit = limit
        self.logger = logger
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        written += unwrapOutboundIn(data).readableBytes
        context.write(data, promise: promise)
    }

    func flush(context: ChannelHandlerContext) {
        context.flush()
        // The flush wrote what the socket took; only bytes still waiting start the clock, so a
        // connection whose client keeps up (an event stream, one event a second) costs no timer.
        if timer == nil, sent(context) < written {
            progress = (sent(context), context.eventLoop.now)
            schedule(context)
        }
    }

    /// The bytes handed to the channel that have left it.
    private func sent(_ context: ChannelHandlerContext) -> Int {
        let waiting = (try? context.channel.syncOptions?.getOption(ChannelOptions.bufferedWritableBytes)) ?? 0
        return written - waiting
    }

    private func schedule(_ context: ChannelHandlerContext) {
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: .nanoseconds(timeout.nanoseconds / Self.checksPerTimeout)) { [self] in
            check(context)
        }
    }

    private func check(_ context: ChannelHandlerContext) {
        timer = nil
        let now = context.eventLoop.now
        let sent = sent(context)
        if sent == written {
            return  // nothing waits: the next write starts the clock again
        }
        if sent > progress.sent {
            progress = (sent, now)
        } else if now - progress.at >= timeout {
            logger.debug(
                "Connection closed: the client took none of the answer in time",
                metadata: ["waiting": "\(written - sent)", "limit": "\(limit)"]
            )
            return context.close(promise: nil)
        }
        schedule(context)
    }
}
