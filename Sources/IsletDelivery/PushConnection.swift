import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import NIOTLS
import Synchronization

/// One request on an HTTP/2 stream: its method, path and headers (the pseudo-headers are the
/// connection's), and its body.
struct PushExchangeRequest: Sendable {
    var method: String
    var path: String
    var headers: HPACKHeaders
    var body: ByteBuffer?
}

/// What a push server answered on a stream.
struct PushExchangeResponse: Sendable {
    var status: Int
    var headers: HPACKHeaders
    var body: ByteBuffer
}

/// Why a request on a `PushConnection` got no answer (besides the errors of NIO, TLS and HTTP/2
/// themselves, which `PushServiceTransport.failure` reads).
enum PushConnectionError: Error, CustomStringConvertible {
    /// The request's deadline passed first.
    case timedOut
    /// The connection or the stream ended under it (a `GOAWAY`, a reset, a close).
    case connectionLost(String)
    /// The server answered something that is not an answer (no `:status`, a body over 64 KB).
    case badAnswer(String)

    var description: String {
        switch self {
        case .timedOut: "the request's deadline passed before the whole answer came"
        case .connectionLost(let why): "the connection was lost under the request (\(why))"
        case .badAnswer(let why): "the answer could not be read (\(why))"
        }
    }
}

/// One HTTP/2 connection over TLS to a push server, made on first use and again after it is
/// lost, on which a sender writes a whole batch of requests at once: the batch crosses to the
/// connection's event loop in one hand-off, every request's stream is opened and written there,
/// and the TLS records of all of them go out in one flush (`FlushCork`). Each answer completes
/// its future on that loop. HTTP/2 itself — framing, HPACK, flow control, the peer's limit on
/// concurrent streams — is swift-nio-http2's.
///
/// Requests that come while the connection is being made wait for its TLS handshake, so a
/// handshake refused is the requests' TLS failure, not a lost connection. After a `GOAWAY` the
/// connection takes no new streams: the next batch makes a new one, and the old one finishes
/// what it has.
final class PushConnection: Sendable {
    let eventLoop: any EventLoop
    /// Requests sent and not answered yet.
    let inFlight = Atomic<Int>(0)
    /// Connections made so far (for tests).
    let connectionsMade = Atomic<Int>(0)
    private let host: String
    private let port: Int
    /// `:authority`: the host, and the port unless it is 443.
    private let authority: String
    private let tls: NIOSSLContext
    private let connectTimeout: TimeAmount
    private let requestTimeout: TimeAmount
    /// Streams a connection opens before the next batch goes on a new one (HTTP/2's stream ids
    /// are 31 bits, a client's the odd ones: about a billion a connection).
    private let streamsPerConnection: Int
    private let state: NIOLoopBoundBox<State>
    /// Connections that said `GOAWAY` or were replaced, finishing their requests.
    private let draining: NIOLoopBoundBox<[ObjectIdentifier: any Channel]>

    private enum State {
        /// No connection: the next batch makes one.
        case idle
        /// Connecting, or in the TLS handshake: the batches that came meanwhile.
        case connecting((any Channel)?, waiting: [PushExchange])
        case ready(any Channel, NIOHTTP2Handler.StreamMultiplexer, FlushCork)
        case shutDown
    }

    /// - Parameters:
    ///   - requestTimeout: The longest a request may take; also how long the TLS handshake may
    ///     take once connected.
    init(
        host: String, port: Int, authority: String, tls: NIOSSLContext, connectTimeout: TimeAmount, requestTimeout: TimeAmount,
        streamsPerConnection: Int = 1 << 29, on eventLoop: any EventLoop
    ) {
        self.streamsPerConnection = max(1, streamsPerConnection)
        (self.host, self.port, self.authority, self.tls) = (host, port, authority, tls)
        (self.connectTimeout, self.requestTimeout) = (connectTimeout, requestTimeout)
        self.eventLoop = eventLoop
        state = NIOLoopBoundBox.makeBoxSendingValue(.idle, as: State.self, eventLoop: eventLoop)
        draining = NIOLoopBoundBox.makeBoxSendingValue([:], eventLoop: eventLoop)
    }

    /// Sends `requests` at once; each future is its answer, or why there is none, within `timeout`.
    func send(_ requests: [PushExchangeRequest], timeout: TimeAmount) -> [EventLoopFuture<PushExchangeResponse>] {
        let promises = requests.map { _ in eventLoop.makePromise(of: PushExchangeResponse.self) }
        inFlight.add(requests.count, ordering: .relaxed)
        eventLoop.execute {
            let exchanges = zip(requests, promises).map { PushExchange($0, authority: self.authority, promise: $1, connection: self) }
            let bound = NIOLoopBound(exchanges, eventLoop: self.eventLoop)
            let deadline = self.eventLoop.scheduleTask(in: timeout) { for exchange in bound.value { exchange.fail(PushConnectionError.timedOut) } }
            Batch.watch(exchanges, deadline: deadline)
            self.start(exchanges)
        }
        return promises.map(\.futureResult)
    }

    /// An exchange ended, answered or not.
    fileprivate func ended() { inFlight.subtract(1, ordering: .relaxed) }

    private func start(_ exchanges: [PushExchange]) {
        switch state.value {
        case .ready(let channel, let multiplexer, let cork) where channel.isActive && cork.streams < streamsPerConnection:
            cork.streams += exchanges.count
            open(exchanges, on: multiplexer, cork: cork)
            // Stream ids run out after about a billion (2³¹ over two): long before, the next batch
            // goes on a new connection, and this one finishes what it has.
            if cork.streams >= streamsPerConnection { goingAway(channel) }
        case .connecting(let channel, let waiting):
            state.value = .connecting(channel, waiting: waiting + exchanges)
        case .shutDown:
            for exchange in exchanges { exchange.fail(PushConnectionError.connectionLost("the sender is shutting down")) }
        case .idle, .ready:
            connect(exchanges)
        }
    }

    /// Opens a stream for each exchange and writes it; the TLS records of all go out at the end.
    private func open(_ exchanges: [PushExchange], on multiplexer: NIOHTTP2Handler.StreamMultiplexer, cork: FlushCork) {
        cork.cork()
        for exchange in exchanges where !exchange.isDone {
            let bound = NIOLoopBound(exchange, eventLoop: eventLoop)
            let created = eventLoop.makePromise(of: (any Channel).self)
            created.futureResult.whenFailure { bound.value.fail($0) }
            multiplexer.createStreamChannel(promise: created) { stream in
                stream.eventLoop.makeCompletedFuture { try stream.pipeline.syncOperations.addHandler(bound.value) }
            }
        }
        cork.uncork()
    }

    private func connect(_ exchanges: [PushExchange]) {
        state.value = .connecting(nil, waiting: exchanges)
        connectionsMade.add(1, ordering: .relaxed)
        let (tls, host) = (self.tls, self.host)
        // An address is not a server name (SNI): the certificate is then checked against it.
        let serverName = host.isIPAddress ? nil : host
        ClientBootstrap(group: eventLoop)
            .connectTimeout(connectTimeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: tls, serverHostname: serverName))
                    try channel.pipeline.syncOperations.addHandler(ConnectionWatcher(connection: self))
                }
            }
            .connect(host: host, port: port)
            .whenComplete { result in
                switch result {
                case .success(let channel):
                    guard case .connecting(nil, let waiting) = self.state.value else { return channel.close(promise: nil) }
                    self.state.value = .connecting(channel, waiting: waiting)
                    let handshake = self.requestTimeout
                    channel.eventLoop.scheduleTask(in: handshake) {
                        if case .connecting(let current, _) = self.state.value, current === channel { channel.close(promise: nil) }
                    }
                case .failure(let error):
                    self.failWaiting(error)
                }
            }
    }

    /// The TLS handshake completed on `channel`: HTTP/2 on it, and the waiting batches written.
    fileprivate func handshakeCompleted(_ channel: any Channel, protocol negotiated: String?, before watcher: ConnectionWatcher) {
        guard case .connecting(let current, let waiting) = state.value, current === channel else { return }
        do {
            guard negotiated == nil || negotiated == "h2" else {
                throw PushConnectionError.badAnswer("the server speaks \(negotiated!), not HTTP/2 (ALPN h2)")
            }
            let sync = channel.pipeline.syncOperations
            let cork = FlushCork()
            try sync.addHandler(cork, position: .before(watcher))
            let multiplexer = try sync.configureHTTP2Pipeline(
                mode: .client, connectionConfiguration: .init(), streamConfiguration: .init(), position: .before(watcher)
            ) { stream in stream.close() }  // a server push: refused
            state.value = .ready(channel, multiplexer, cork)
            cork.streams = waiting.count
            open(waiting, on: multiplexer, cork: cork)
        } catch {
            state.value = .idle
            for exchange in waiting { exchange.fail(error) }
            channel.close(promise: nil)
        }
    }

    /// `channel` said `GOAWAY`: it takes no new streams, and is closed once every request on it
    /// has had its whole time (`requestTimeout`), if the server has not closed it first.
    fileprivate func goingAway(_ channel: any Channel) {
        if case .ready(let current, _, _) = state.value, current === channel { state.value = .idle }
        let id = ObjectIdentifier(channel)
        guard draining.value[id] == nil else { return }
        draining.value[id] = channel
        channel.closeFuture.whenComplete { _ in self.draining.value[id] = nil }
        channel.eventLoop.scheduleTask(in: requestTimeout) { channel.close(promise: nil) }
    }

    /// `channel` closed, after `error` if one was caught.
    fileprivate func closed(_ channel: any Channel, error: (any Error)?) {
        switch state.value {
        case .connecting(let current, _) where current === channel:
            failWaiting(error ?? PushConnectionError.connectionLost("closed during the TLS handshake"))
        case .ready(let current, _, _) where current === channel:
            state.value = .idle
        default:
            break
        }
    }

    private func failWaiting(_ error: any Error) {
        guard case .connecting(_, let waiting) = state.value else { return }
        state.value = .idle
        for exchange in waiting { exchange.fail(error) }
    }

    /// Whether a connection is made or being made (for tests: it is made again when needed).
    func isOpen() async -> Bool {
        let open = eventLoop.submit {
            switch self.state.value {
            case .ready(let channel, _, _): channel.isActive
            case .connecting: true
            case .idle, .shutDown: false
            }
        }
        return (try? await open.get()) ?? false
    }

    /// Closes the connection; what is in flight fails, and what comes later.
    func shutdown() async {
        let closing: EventLoopFuture<Void> = eventLoop.flatSubmit {
            let channel: (any Channel)?
            switch self.state.value {
            case .ready(let current, _, _): channel = current
            case .connecting(let current, let waiting):
                channel = current
                for exchange in waiting { exchange.fail(PushConnectionError.connectionLost("the sender is shutting down")) }
            case .idle, .shutDown: channel = nil
            }
            self.state.value = .shutDown
            let closing = (channel.map { [$0] } ?? []) + self.draining.value.values
            for channel in closing { channel.close(promise: nil) }
            return EventLoopFuture.andAllComplete(closing.map(\.closeFuture), on: self.eventLoop)
        }
        try? await closing.get()
    }
}

/// A batch's requests and their one deadline: the timer goes when the last is answered.
private enum Batch {
    static func watch(_ exchanges: [PushExchange], deadline: Scheduled<Void>) {
        var open = exchanges.count
        for exchange in exchanges {
            exchange.onEnd = {
                open -= 1
                if open == 0 { deadline.cancel() }
            }
        }
    }
}

/// One request's stream: writes the request when the stream is active, reads the answer,
/// completes the promise once.
private final class PushExchange: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    /// The most of an answer's body read (Apple's are under 200 bytes).
    static let bodyLimit = 64 << 10

    private let request: PushExchangeRequest
    private let authority: String
    private let promise: EventLoopPromise<PushExchangeResponse>
    private let connection: PushConnection
    private var stream: (any Channel)?
    private var response: (status: Int, headers: HPACKHeaders)?
    private var body = ByteBuffer()
    private(set) var isDone = false
    var onEnd: (() -> Void)?

    init(_ request: PushExchangeRequest, authority: String, promise: EventLoopPromise<PushExchangeResponse>, connection: PushConnection) {
        (self.request, self.authority, self.promise, self.connection) = (request, authority, promise, connection)
    }

    func channelActive(context: ChannelHandlerContext) {
        stream = context.channel
        guard !isDone else { return context.close(promise: nil) }
        var headers = HPACKHeaders()
        headers.reserveCapacity(request.headers.count + 4)
        headers.add(name: ":method", value: request.method)
        headers.add(name: ":scheme", value: "https")
        headers.add(name: ":path", value: request.path)
        headers.add(name: ":authority", value: authority)
        headers.add(contentsOf: request.headers)
        context.write(wrapOutboundOut(.headers(.init(headers: headers, endStream: request.body == nil))), promise: nil)
        if let body = request.body {
            context.write(wrapOutboundOut(.data(.init(data: .byteBuffer(body), endStream: true))), promise: nil)
        }
        context.flush()
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .headers(let frame):
            // A 1xx is not the answer; trailers after it add nothing Islet reads.
            if response == nil, let status = frame.headers.first(name: ":status").flatMap({ Int($0) }), status >= 200 {
                response = (status, frame.headers)
            }
            if frame.endStream { finish() }
        case .data(let frame):
            if case .byteBuffer(var chunk) = frame.data {
                guard body.readableBytes + chunk.readableBytes <= Self.bodyLimit else {
                    fail(PushConnectionError.badAnswer("a body over \(Self.bodyLimit) bytes"))
                    return context.close(promise: nil)
                }
                body.writeBuffer(&chunk)
            }
            if frame.endStream { finish() }
        case .rstStream(let code):
            fail(PushConnectionError.connectionLost("the server reset the stream: \(code)"))
        default:
            break
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(PushConnectionError.connectionLost("the stream closed before the whole answer came"))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(error)
        context.close(promise: nil)
    }

    private func finish() {
        guard let response else { return fail(PushConnectionError.badAnswer("the server ended the stream without a :status")) }
        end()?.succeed(PushExchangeResponse(status: response.status, headers: response.headers, body: body))
    }

    /// Ends the exchange without an answer, and its stream with it (a reset, if it is open).
    func fail(_ error: any Error) {
        guard let promise = end() else { return }
        promise.fail(error)
        stream?.close(promise: nil)
    }

    /// The promise to complete, the first time only.
    private func end() -> EventLoopPromise<PushExchangeResponse>? {
        guard !isDone else { return nil }
        isDone = true
        connection.ended()
        onEnd?()
        onEnd = nil
        return promise
    }
}

/// Holds a connection's flushes while a batch is written, so that the batch's TLS records go
/// to the socket in one write; and counts the connection's streams.
private final class FlushCork: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = Any

    /// Streams opened on the connection so far.
    var streams = 0

    private var context: ChannelHandlerContext?
    private var corked = false
    private var pending = false

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    func flush(context: ChannelHandlerContext) {
        if corked { pending = true } else { context.flush() }
    }

    func cork() { corked = true }

    func uncork() {
        corked = false
        if pending, let context {
            pending = false
            context.flush()
        }
    }
}

/// Watches a connection's channel for what its `PushConnection` must know: the TLS handshake,
/// a `GOAWAY`, an error, the close.
///
/// Only its channel's event loop touches it (hence `@unchecked Sendable`: a pipeline position
/// names it).
private final class ConnectionWatcher: ChannelInboundHandler, RemovableChannelHandler, @unchecked Sendable {
    typealias InboundIn = Any

    private let connection: PushConnection
    private var error: (any Error)?

    init(connection: PushConnection) { self.connection = connection }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSUserEvent, case .handshakeCompleted(let negotiated) = event {
            connection.handshakeCompleted(context.channel, protocol: negotiated, before: self)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if let frame = unwrapInboundIn(data) as? HTTP2Frame, case .goAway = frame.payload {
            connection.goingAway(context.channel)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // The first error says why; what follows it is its consequence.
        if self.error == nil { self.error = error }
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        connection.closed(context.channel, error: error)
        context.fireChannelInactive()
    }
}

extension String {
    /// Whether the string is an IPv4 or IPv6 address rather than a name.
    fileprivate var isIPAddress: Bool {
        (try? SocketAddress(ipAddress: self, port: 0)) != nil
    }
}
