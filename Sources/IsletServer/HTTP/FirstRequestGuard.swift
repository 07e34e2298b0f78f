import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1

/// Wraps a server child channel so a connection that never delivers a well-formed first
/// request is answered and closed, instead of being held open forever.
///
/// Hummingbird answers malformed requests with 400, but with the WebSocket upgrade pipeline the
/// first request is parsed by NIO's upgrade handler, which leaves a parse error unanswered and
/// the connection open; and a connection that sends nothing is never timed out.
struct GuardedChildChannel<Inner: ServerChildChannel>: ServerChildChannel {
    typealias Value = Inner.Value

    let inner: Inner
    /// How long a new connection may take to send its first request head.
    let firstRequestTimeout: TimeAmount

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        inner.setup(channel: channel, logger: logger).flatMapThrowing { value in
            try channel.pipeline.syncOperations.addHandler(FirstRequestGuard(timeout: firstRequestTimeout))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}

/// Sits after the HTTP decoder until the first request part passes, then only forwards.
final class FirstRequestGuard: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let timeout: TimeAmount
    private var sawRequest = false
    private var timer: Scheduled<Void>?

    init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        timer = context.eventLoop.scheduleTask(in: timeout) {
            Self.close(channel)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if !sawRequest {
            sawRequest = true
            timer?.cancel()
        }
        context.fireChannelRead(data)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard !sawRequest, error is HTTPParserError else {
            return context.fireErrorCaught(error)
        }
        sawRequest = true
        timer?.cancel()
        let body = #"{"error":{"message":"The request is not valid HTTP/1.1.","reason":"invalidRequest"}}"#
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json; charset=utf-8")
        headers.add(name: "Content-Length", value: "\(body.utf8.count)")
        headers.add(name: "Connection", value: "close")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .badRequest, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: body)))), promise: nil)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
            Self.close(channel)
        }
    }

    /// Closes a connection that never got to a request. Telling the pipeline its input closed
    /// first lets the upgrade handler end quietly rather than log an error per connection.
    ///
    /// A WebSocket upgrade is the exception: its request is consumed by the upgrade handler
    /// before it reaches this guard, which then sees nothing — but the upgrade removed the HTTP
    /// decoder. Closing then cut every WebSocket subscriber off after the timeout.
    private static func close(_ channel: any Channel) {
        guard (try? channel.pipeline.syncOperations.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)) != nil else {
            return
        }
        channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        channel.close(promise: nil)
    }
}
