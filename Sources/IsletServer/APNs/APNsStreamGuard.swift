import Logging
import NIOCore
import NIOHTTP2

/// Frees an APNs stream as soon as it can hold nothing more worth keeping.
///
/// - A request that is not complete (its END_STREAM received) within `requestTimeout` of the
///   stream opening is reset (RST_STREAM, CANCEL).
/// - A response that is complete while the client is still sending — a `403` answered from the
///   headers alone — gives the request `earlyAnswerGrace` to finish, then is followed by
///   RST_STREAM with NO_ERROR, as RFC 9113 §8.1 allows: the stream is released instead of
///   waiting for a body that may never come. The grace is for clients that fail a request reset
///   while they still send its body even though its answer came (async-http-client, which
///   APNSwift uses, does): an honest client finishes within it and reads its reason.
///
/// It sits at the front of the stream's pipeline, where frames pass, and tells the connection's
/// `APNsConnectionGuard` when the stream opens and closes.
final class APNsStreamGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias InboundOut = HTTP2Frame.FramePayload
    typealias OutboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    /// How long a request answered early may still take to arrive before its stream is reset.
    static let earlyAnswerGrace = TimeAmount.seconds(1)

    private let requestTimeout: TimeAmount
    private let logger: Logger
    private var requestComplete = false
    private var timer: Scheduled<Void>?

    init(requestTimeout: TimeAmount, logger: Logger) {
        self.requestTimeout = requestTimeout
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if let parent = context.channel.parent,
            let connection = try? parent.pipeline.syncOperations.handler(type: APNsConnectionGuard.self)
        {
            let id = (try? context.channel.syncOptions?.getOption(HTTP2StreamChannelOptions.streamID)) ?? .rootStream
            connection.streamOpened(id)
            context.channel.closeFuture.assumeIsolated().whenComplete { _ in connection.streamClosed() }
        }
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: requestTimeout) { [self] in
            logger.debug("APNs stream reset: its request did not arrive in time", metadata: ["limit": "apns.requestTimeout"])
            context.close(promise: nil)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if Self.endsStream(unwrapInboundIn(data)) {
            requestComplete = true
            timer?.cancel()
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        context.write(data, promise: promise)
        if Self.endsStream(unwrapOutboundIn(data)), !requestComplete {
            timer?.cancel()
            timer = context.eventLoop.assumeIsolated().scheduleTask(in: min(Self.earlyAnswerGrace, requestTimeout)) { [self] in
                guard !requestComplete else { return }
                context.writeAndFlush(wrapOutboundOut(.rstStream(.noError)), promise: nil)
            }
        }
    }

    private static func endsStream(_ payload: HTTP2Frame.FramePayload) -> Bool {
        switch payload {
        case .headers(let headers): headers.endStream
        case .data(let data): data.endStream
        default: false
        }
    }
}

/// Puts `APNsStreamGuard` and `EndStreamOnLastFrame` in front of the codec of each HTTP/2
/// stream. Hummingbird adds its stream handlers behind the codec, where they see HTTP parts
/// rather than frames, so this one only reaches forward and otherwise lets everything through.
final class APNsStreamSetup: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = Any

    private let requestTimeout: TimeAmount
    private let logger: Logger

    init(requestTimeout: TimeAmount, logger: Logger) {
        self.requestTimeout = requestTimeout
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        do {
            // The guard goes first, nearest the network: it sees the frames `EndStreamOnLastFrame` merged.
            try context.pipeline.syncOperations.addHandler(EndStreamOnLastFrame(), position: .first)
            try context.pipeline.syncOperations.addHandler(APNsStreamGuard(requestTimeout: requestTimeout, logger: logger), position: .first)
        } catch {
            context.fireErrorCaught(error)
        }
    }
}
