import NIOCore
import NIOHTTP1

/// One keep-alive HTTP/1.1 connection with one request in flight at a time: what a producer's
/// HTTP client does. Lean on purpose (no pool, no redirects, no decoding) so the harness costs
/// far less per request than the servers it measures.
final class HTTPConnection: Sendable {
    private let channel: any Channel
    private let responses: ResponseHandler
    let host: String

    private init(channel: any Channel, responses: ResponseHandler, host: String) {
        self.channel = channel
        self.responses = responses
        self.host = host
    }

    /// A connection to a loopback port.
    static func connect(port: Int) async throws -> HTTPConnection {
        let responses = ResponseHandler()
        let channel = try await Loopback.connect(port: port) { channel in
            try channel.pipeline.syncOperations.addHTTPClientHandlers()
            try channel.pipeline.syncOperations.addHandler(responses)
        }
        return HTTPConnection(channel: channel, responses: responses, host: "127.0.0.1:\(port)")
    }

    /// Sends a request and returns the response's status and body.
    func send(_ method: HTTPMethod, _ uri: String, headers: [(String, String)] = [], body: ByteBuffer? = nil) async throws -> (status: Int, body: ByteBuffer) {
        var head = HTTPRequestHead(version: .http1_1, method: method, uri: uri)
        head.headers.add(name: "Host", value: host)
        for (name, value) in headers { head.headers.add(name: name, value: value) }
        if let body {
            head.headers.add(name: "Content-Type", value: "application/json")
            head.headers.add(name: "Content-Length", value: "\(body.readableBytes)")
        }
        let promise = channel.eventLoop.makePromise(of: (Int, ByteBuffer).self)
        let channel = self.channel
        let responses = self.responses
        let request = head
        channel.eventLoop.execute {
            responses.expect(promise)
            channel.write(HTTPClientRequestPart.head(request), promise: nil)
            if let body { channel.write(HTTPClientRequestPart.body(.byteBuffer(body)), promise: nil) }
            channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        }
        let (status, bytes) = try await promise.futureResult.get()
        return (status, bytes)
    }

    func close() async {
        try? await channel.close()
    }
}

/// Completes each request's promise with its response, in order.
private final class ResponseHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPClientResponsePart
    private var waiting: [EventLoopPromise<(Int, ByteBuffer)>] = []
    private var status = 0
    private var body: ByteBuffer?

    /// On the channel's event loop.
    func expect(_ promise: EventLoopPromise<(Int, ByteBuffer)>) {
        waiting.append(promise)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            status = Int(head.status.code)
            body = nil
        case .body(var part):
            if body == nil { body = part } else { body!.writeBuffer(&part) }
        case .end:
            guard !waiting.isEmpty else { return }
            waiting.removeFirst().succeed((status, body ?? ByteBuffer()))
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(ChannelError.ioOnClosedChannel)
    }

    private func fail(_ error: any Error) {
        let waiting = self.waiting
        self.waiting = []
        waiting.forEach { $0.fail(error) }
    }
}
