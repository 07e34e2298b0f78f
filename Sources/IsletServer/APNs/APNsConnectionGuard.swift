import Logging
import NIOCore
import NIOHTTP2

/// Holds an APNs connection to its deadlines: from accepting it, TLS, the HTTP/2 preface and a
/// first stream within `firstRequestTimeout`; after that, an answer delivered at least every
/// `idleTimeout`. Streams in flight put the deadline off, as long as none of them has stalled —
/// been reset by its own deadline (`APNsStreamGuard`) since the last answer went out: a client
/// that takes no answers (a zero flow-control window) cannot keep its connection by opening
/// streams that the server must reset one after another.
///
/// A connection that misses a deadline gets a GOAWAY saying `{"reason":"IdleTimeout"}`, as
/// Apple's servers explain why they end a connection, and is closed — at once, rather than after
/// the PING round trip of a graceful shutdown a silent client would never answer, and without
/// waiting for the GOAWAY to be taken by a client that reads nothing.
///
/// It sits at the front of the pipeline, out of the way of the bytes; each stream's
/// `APNsStreamGuard` tells it what its streams do.
final class APNsConnectionGuard: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    private let firstRequestTimeout: TimeAmount
    private let idleTimeout: TimeAmount
    private let logger: Logger
    private var context: ChannelHandlerContext?
    private var openStreams = 0
    private var lastStreamID = HTTP2StreamID.rootStream
    private var stalled = false
    private var timer: Scheduled<Void>?

    init(firstRequestTimeout: TimeAmount, idleTimeout: TimeAmount, logger: Logger) {
        self.firstRequestTimeout = firstRequestTimeout
        self.idleTimeout = idleTimeout
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        arm(after: firstRequestTimeout, limit: "apns.firstRequestTimeout")
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        self.context = nil
    }

    /// A stream opened: the first one ends the first-request deadline and starts the idle one.
    func streamOpened(_ id: HTTP2StreamID) {
        if lastStreamID == .rootStream {
            arm(after: idleTimeout, limit: "apns.idleTimeout")
        }
        openStreams += 1
        lastStreamID = max(lastStreamID, id)
    }

    /// A stream closed, however it ended.
    func streamClosed() {
        openStreams -= 1
    }

    /// A stream's answer went out in full: the connection is in use, and the idle deadline
    /// starts again.
    func answerDelivered() {
        stalled = false
        arm(after: idleTimeout, limit: "apns.idleTimeout")
    }

    /// A stream was reset by its deadline: the streams in flight no longer put the idle
    /// deadline off.
    func streamTimedOut() {
        stalled = true
    }

    private func arm(after delay: TimeAmount, limit: String) {
        guard let context else { return }
        timer?.cancel()
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: delay) { [self] in
            if openStreams > 0, !stalled {
                // Streams in flight, each bound by its own deadline: one of them ends first.
                return arm(after: delay, limit: limit)
            }
            logger.debug("APNs connection closed: no request answered in time", metadata: ["limit": "\(limit)"])
            goAway(context)
        }
    }

    private func goAway(_ context: ChannelHandlerContext) {
        let channel = context.channel
        guard (try? channel.pipeline.syncOperations.handler(type: NIOHTTP2Handler.self)) != nil else {
            // Still in TLS or choosing a protocol, or speaking HTTP/1.1: no frame to send.
            return channel.close(promise: nil)
        }
        let reason = channel.allocator.buffer(string: #"{"reason":"IdleTimeout"}"#)
        let frame = HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: lastStreamID, errorCode: .noError, opaqueData: reason))
        channel.writeAndFlush(frame, promise: nil)
        channel.close(promise: nil)
    }
}
