import Logging
import NIOCore
import NIOHTTP2

/// Frees an APNs stream as soon as it can hold nothing more worth keeping.
///
/// - A stream that is not over within `requestTimeout` of opening — its request received
///   (END_STREAM) and its answer delivered — is reset (RST_STREAM, CANCEL). The answer counts:
///   a client that grants no flow-control window takes no body, and its stream, with the answer
///   waiting in it, would otherwise be held for ever.
/// - A response that is complete while the client is still sending — a `403` answered from the
///   headers alone — gives the request `earlyAnswerGrace` to finish, then is followed by
///   RST_STREAM with NO_ERROR, as RFC 9113 §8.1 allows: the stream is released instead of
///   waiting for a body that may never come. The grace is for clients that fail a request reset
///   while they still send its body even though its answer came (async-http-client, which
///   APNSwift uses, does): an honest client finishes within it and reads its reason.
///
/// It sits at the front of the stream's pipeline, where frames pass, and tells the connection's
/// `APNsConnectionGuard` when the stream opens and closes, when its answer is delivered and when
/// it ran out of time.
final class APNsStreamGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias InboundOut = HTTP2Frame.FramePayload
    typealias OutboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    /// How long a request answered early may still take to arrive before its stream is reset.
    static let earlyAnswerGrace = TimeAmount.seconds(1)

    private let requestTimeout: TimeAmount
    private let logger: Logger
    private var connection: APNsConnectionGuard?
    private var requestComplete = false
    /// The stream's deadline (`requestTimeout`): ended only by the answer's delivery.
    private var deadline: Scheduled<Void>?
    /// The reset that follows an early answer once its grace has passed.
    private var earlyAnswerReset: Scheduled<Void>?

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
            self.connection = connection
        }
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: requestTimeout) { [self] in
            if requestComplete {
                logger.debug("APNs stream reset: the client did not take its answer in time", metadata: ["limit": "apns.requestTimeout"])
            } else {
                logger.debug("APNs stream reset: its request did not arrive in time", metadata: ["limit": "apns.requestTimeout"])
            }
            connection?.streamTimedOut()
            context.close(promise: nil)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        earlyAnswerReset?.cancel()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if Self.endsStream(unwrapInboundIn(data)) {
            requestComplete = true
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard Self.endsStream(unwrapOutboundIn(data)) else {
            return context.write(data, promise: promise)
        }
        // The last frame of the answer: once it is on the wire, the stream owes nothing more
        // but the rest of its request, which an early answer's grace bounds.
        let written = promise ?? context.eventLoop.makePromise()
        written.futureResult.assumeIsolated().whenSuccess { [self] in
            deadline?.cancel()
            connection?.answerDelivered()
        }
        context.write(data, promise: written)
        if !requestComplete {
            earlyAnswerReset = context.eventLoop.assumeIsolated().scheduleTask(in: min(Self.earlyAnswerGrace, requestTimeout)) { [self] in
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
