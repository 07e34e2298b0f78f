import Logging
import NIOCore
import NIOHTTP2

/// Holds an APNs connection to its deadlines: from accepting it, TLS, the HTTP/2 preface and a
/// first stream within `firstRequestTimeout`; after its last stream closes, a next one within
/// `idleTimeout`. A connection that misses one gets a GOAWAY saying `{"reason":"IdleTimeout"}`,
/// as Apple's servers explain why they end a connection, and is closed — at once, rather than
/// after the PING round trip of a graceful shutdown a silent client would never answer.
///
/// It sits at the front of the pipeline, out of the way of the bytes; each stream's
/// `APNsStreamGuard` tells it when streams open and close.
final class APNsConnectionGuard: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    private let firstRequestTimeout: TimeAmount
    private let idleTimeout: TimeAmount
    private let logger: Logger
    private var context: ChannelHandlerContext?
    private var openStreams = 0
    private var lastStreamID = HTTP2StreamID.rootStream
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

    /// A stream opened: no deadline runs while one is open.
    func streamOpened(_ id: HTTP2StreamID) {
        openStreams += 1
        lastStreamID = max(lastStreamID, id)
        timer?.cancel()
        timer = nil
    }

    /// A stream closed: the last one to close starts the idle timeout.
    func streamClosed() {
        openStreams -= 1
        if openStreams == 0 {
            arm(after: idleTimeout, limit: "apns.idleTimeout")
        }
    }

    private func arm(after delay: TimeAmount, limit: String) {
        guard let context else { return }
        timer?.cancel()
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: delay) { [self] in
            logger.debug("APNs connection closed: no request in time", metadata: ["limit": "\(limit)"])
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
        channel.writeAndFlush(frame).whenComplete { _ in channel.close(promise: nil) }
    }
}
