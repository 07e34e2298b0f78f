import HTTPTypes
import IsletCore
import Logging
import NIOCore
import NIOHTTP1

/// Holds an HTTP/1.1 connection's client to `InboundDeadlines`: a connection that does not send
/// its request heads and bodies in time is closed, instead of being held open forever by a
/// client that sends nothing, or one byte a second.
///
/// It sits after the HTTP decoder (and the WebSocket upgrade handler), where it sees request
/// parts come in and response parts go out. It also sees that each request that cannot be
/// parsed gets exactly one answer, and that the connection ends with it:
/// - a request head that cannot be parsed is answered `400 invalidRequest` here — with the
///   WebSocket upgrade pipeline, NIO's upgrade handler would leave it unanswered and the
///   connection open, and Hummingbird would answer a later one with an empty `400`;
/// - a body whose framing breaks (a chunk size of `zz`) comes after the route has its request:
///   the route's answer (the JSON `400`, or whatever it answers without reading the body) is
///   the only one, sent with `Connection: close`, and the connection closes after it — the
///   empty `400` Hummingbird then writes for the same request never goes out, so a proxy
///   reusing the connection cannot take it for the answer to the next request.
///
/// It also marks an HTTP/1.0 request's head (`KeylessAccess.requestVersionField`), which the
/// HTTP types it is converted to cannot say.
///
/// A WebSocket upgrade ends its job: the connection is a WebSocket then, with pings of its
/// own, and the guard steps aside.
final class RequestGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let limits: InboundDeadlines.Limits
    private let logger: Logger
    private var deadlines: InboundDeadlines?
    private var timer: Scheduled<Void>?
    private var timerDeadline: NIODeadline?
    /// A request could not be read to its end: the connection ends once its answers are written.
    private var closesAfterAnswers = false
    /// The last answer is written and the connection closing: nothing more goes out.
    private var answered = false

    init(limits: InboundDeadlines.Limits, logger: Logger) {
        self.limits = limits
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        deadlines = InboundDeadlines(limits: limits, connectedAt: context.eventLoop.now)
        schedule(context)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let now = context.eventLoop.now
        switch unwrapInboundIn(data) {
        case .head(var head):
            deadlines?.headReceived(at: now)
            schedule(context)
            // The HTTP version is gone once the head becomes an `HTTPRequest`; keyless access
            // needs to know an HTTP/1.0 request (`KeylessAccess`). A client's own copy of the
            // field never gets through.
            let field = KeylessAccess.requestVersionField.rawName
            head.headers.remove(name: field)
            if (head.version.major, head.version.minor) < (1, 1) { head.headers.add(name: field, value: "HTTP/1.0") }
            return context.fireChannelRead(wrapInboundOut(.head(head)))
        case .body(let bytes):
            // Only extends the deadline: the timer, when it fires, finds the later one.
            deadlines?.bodyReceived(bytes.readableBytes)
        case .end:
            deadlines?.requestEnded(at: now)
            schedule(context)
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard !answered else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        switch unwrapOutboundIn(data) {
        case .head(var head) where closesAfterAnswers:
            head.headers.replaceOrAdd(name: "Connection", value: "close")
            context.write(wrapOutboundOut(.head(head)), promise: promise)
        case .end:
            deadlines?.responseEnded(at: context.eventLoop.now)
            schedule(context)
            context.write(data, promise: promise)
            if closesAfterAnswers, deadlines?.unanswered == 0 {
                answered = true
                context.flush()
                Self.close(context.channel)
            }
        default:
            context.write(data, promise: promise)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .upgradeComplete = event as? HTTPServerUpgradeEvents {
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard error is HTTPParserError, let phase = deadlines?.phase else {
            return context.fireErrorCaught(error)
        }
        guard case .head = phase else {
            // Mid-request: the route has it, and its reader must learn the body is broken.
            closesAfterAnswers = true
            if deadlines?.unanswered == 0 {
                // Answered already, without reading the body: that answer was the only one.
                answered = true
                Self.close(context.channel)
            }
            return context.fireErrorCaught(error)
        }
        deadlines = nil
        answered = true
        timer?.cancel()
        let refusal = IsletError(.invalidRequest, "The request is not valid HTTP/1.1.")
        let channel = context.channel
        refusal.writeClosingResponse(to: context).whenComplete { _ in
            Self.close(channel)
        }
    }

    /// Arms the timer for the current phase's deadline, unless it is armed for that already.
    private func schedule(_ context: ChannelHandlerContext) {
        let deadline = deadlines?.deadline
        guard deadline != timerDeadline else { return }
        timer?.cancel()
        timerDeadline = deadline
        timer = deadline.map { deadline in
            context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
                timerDeadline = nil
                expire(context)
            }
        }
    }

    private func expire(_ context: ChannelHandlerContext) {
        guard let deadlines, deadlines.hasExpired(at: context.eventLoop.now) else {
            // The body arrived faster than the grace alone allows: its deadline moved on.
            return schedule(context)
        }
        self.deadlines = nil
        switch deadlines.phase {
        case .head(_, first: true):
            logger.debug("Connection closed: no request head in time", metadata: ["limit": "server.requestHeadTimeout"])
        case .head:
            break  // a keep-alive connection idle for too long: closed without a word
        case .body(_, let received):
            logger.debug(
                "Connection closed: the request body came too slowly",
                metadata: ["received": "\(received)", "limit": "server.requestBodyTimeout, server.minBodyRate"]
            )
            // A body cut short must not pass for a whole one: the request's reader gets an error.
            context.fireErrorCaught(RequestBodyTimeout())
        case .answering:
            return
        }
        Self.close(context.channel)
    }

    /// Closes the connection. Telling the pipeline its input closed first lets the WebSocket
    /// upgrade handler, while it waits for a first request, end quietly rather than log an error.
    private static func close(_ channel: any Channel) {
        channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        channel.close(promise: nil)
    }
}

/// What reading a request body throws when the body did not arrive in time and the connection
/// was closed.
struct RequestBodyTimeout: Error, CustomStringConvertible {
    var description: String {
        "The request body did not arrive in time (server.requestBodyTimeout, server.minBodyRate)."
    }
}
