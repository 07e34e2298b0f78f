import HTTPTypes
import HummingbirdCore
import HummingbirdHTTP2
import Logging
import NIOCore
import NIOHTTPTypes
import NIOSSL
import NIOTLS

/// The APNs-compatible endpoint's connections: TLS, then HTTP/2.
///
/// Clients that negotiate `h2` by ALPN get HTTP/2, as do clients that offer no ALPN at all and
/// send the HTTP/2 connection preface straight away (several APNs libraries do, and Apple's
/// servers accept them). A client that speaks HTTP/1.1 to Apple's routes gets one clear
/// refusal, `505` with `{"reason": "HTTP2Required"}`, and the connection closes; Google's
/// routes (`FCMRoutes`) are served over HTTP/1.1 as over HTTP/2.
struct APNsChildChannel: ServerChildChannel {
    enum Connection: Sendable {
        case http2(HTTP2Channel.Value)
        case http1(HTTP1Channel.Value)
    }

    struct Value: ServerChildChannelValue {
        let connection: EventLoopFuture<Connection>
        let channel: any Channel
    }

    private let sslContext: NIOSSLContext
    private let http2: HTTP2Channel
    private let http1: HTTP1Channel
    private let settings: APNsSettings
    private let cap: ConnectionCap
    private let logger: Logger

    /// - Parameters:
    ///   - responder: Hummingbird's responder for the APNs routes.
    ///   - identity: The certificate and key TLS presents.
    ///   - settings: The endpoint's timeouts.
    ///   - cap: The port's connection cap; a connection over it is closed as it arrives.
    ///   - hotPush: Serves a device push in its stream's pipeline (`APNsHotPush`), if set.
    ///   - logger: Where refusals and timeouts are logged (at debug).
    init(
        responder: @escaping HTTPChannelHandler.Responder, identity: TLSIdentity, settings: APNsSettings, cap: ConnectionCap,
        hotPush: APNsHotPush.Serving? = nil, logger: Logger
    ) throws {
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: identity.certificateChain.map { .certificate($0) },
            privateKey: .privateKey(identity.privateKey)
        )
        tls.applicationProtocols = ["h2", "http/1.1"]
        tls.minimumTLSVersion = .tlsv12
        sslContext = try NIOSSLContext(configuration: tls)
        // The idle timeout is APNsConnectionGuard's: Hummingbird's waits for a PING a silent
        // client never answers. NIO's HTTP/2 settings stay: 100 concurrent streams, a 16 KiB
        // header list, and its limits on resets, CONTINUATION frames and control frames.
        let requestTimeout = TimeAmount(seconds: settings.requestTimeout)
        http2 = HTTP2Channel(responder: responder, configuration: .init(
            idleTimeout: nil,
            streamConfiguration: .init(additionalChannelHandlers: [APNsStreamSetup(requestTimeout: requestTimeout, logger: logger)]
                + (hotPush.map { [APNsHotPush(serving: $0)] } ?? []))
        ))
        // Google's routes are served over HTTP/1.1 too, as Google serves them; Apple's are not.
        http1 = HTTP1Channel(responder: { request, writer, channel in
            if FCMRoutes.serves(request.uri.path) {
                try await responder(request, writer, channel)
            } else {
                try await Self.refuseHTTP1(request, writer, channel)
            }
        })
        self.settings = settings
        self.cap = cap
        self.logger = logger
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        guard cap.admit(channel) == .serve else {
            self.logger.debug("APNs connection closed: the port is at its cap", metadata: ["limit": "apns.maxConnections = \(cap.limit)"])
            return channel.eventLoop.makeSucceededFuture(
                Value(connection: channel.eventLoop.makeFailedFuture(ChannelError.inputClosed), channel: channel)
            )
        }
        return channel.eventLoop.makeCompletedFuture {
            let promise = channel.eventLoop.makePromise(of: Connection.self)
            try channel.pipeline.syncOperations.addHandler(APNsConnectionGuard(
                firstRequestTimeout: TimeAmount(seconds: settings.firstRequestTimeout),
                idleTimeout: TimeAmount(seconds: settings.idleTimeout), logger: self.logger
            ))
            try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: sslContext))
            try channel.pipeline.syncOperations.addHandler(ProtocolSelector(promise: promise) { choice in
                switch choice {
                case .http2: http2.setup(channel: channel, logger: logger).map(Connection.http2)
                case .http1: http1.setup(channel: channel, logger: logger).map(Connection.http1)
                }
            })
            return Value(connection: promise.futureResult, channel: channel)
        }
    }

    func handle(value: Value, logger: Logger) async {
        do {
            switch try await value.connection.get() {
            case .http2(let connection): await http2.handle(value: connection, logger: logger)
            case .http1(let connection): await http1.handle(value: connection, logger: logger)
            }
        } catch {
            logger.debug("APNs connection ended before its protocol was known", metadata: ["error": "\(error)"])
        }
    }

    /// What an HTTP/1.1 request on the APNs port gets.
    private static let refuseHTTP1: HTTPChannelHandler.Responder = { _, writer, _ in
        let body = #"{"reason":"HTTP2Required"}"#
        let head = HTTPResponse(
            status: .init(code: 505, reasonPhrase: "HTTP Version Not Supported"),
            headerFields: [.contentType: "application/json", .connection: "close", .contentLength: "\(body.utf8.count)"]
        )
        try await writer.write(response: head, body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
    }
}

/// Picks HTTP/2 or HTTP/1.1 for a TLS connection: by ALPN when the client offered it, else by
/// the first bytes (`PRI` starts the HTTP/2 preface). Holds the bytes back until the pipeline
/// for the chosen protocol is in place, then replays them and steps aside. A client that never
/// gets this far is closed by `APNsConnectionGuard`.
final class ProtocolSelector: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    enum Choice {
        case http2, http1
    }

    private let promise: EventLoopPromise<APNsChildChannel.Connection>
    private let configure: (Choice) -> EventLoopFuture<APNsChildChannel.Connection>
    private var buffered: [NIOAny] = []
    private var seen: [UInt8] = []
    private var sniffing = false
    private var decided = false

    init(
        promise: EventLoopPromise<APNsChildChannel.Connection>,
        configure: @escaping (Choice) -> EventLoopFuture<APNsChildChannel.Connection>
    ) {
        self.promise = promise
        self.configure = configure
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        if !decided { promise.fail(ChannelError.inputClosed) }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted(let negotiated) = event as? TLSUserEvent {
            switch negotiated {
            case "h2": decide(.http2, context: context)
            case "http/1.1": decide(.http1, context: context)
            default: sniffing = true
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !decided else { return context.fireChannelRead(data) }
        buffered.append(data)
        guard sniffing else { return }
        var bytes = unwrapInboundIn(data)
        seen += bytes.readBytes(length: min(bytes.readableBytes, 3 - seen.count)) ?? []
        let preface = Array("PRI".utf8)
        if seen != Array(preface.prefix(seen.count)) {
            decide(.http1, context: context)
        } else if seen.count == 3 {
            decide(.http2, context: context)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !decided {
            decided = true
            promise.fail(ChannelError.inputClosed)
        }
        context.fireChannelInactive()
    }

    private func decide(_ choice: Choice, context: ChannelHandlerContext) {
        guard !decided else { return }
        decided = true
        configure(choice).hop(to: context.eventLoop).assumeIsolatedUnsafeUnchecked().whenComplete { result in
            switch result {
            case .success(let connection):
                let held = self.buffered
                self.buffered = []
                for data in held { context.fireChannelRead(data) }
                if !held.isEmpty { context.fireChannelReadComplete() }
                context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
                self.promise.succeed(connection)
            case .failure(let error):
                self.promise.fail(error)
                context.close(promise: nil)
            }
        }
    }
}
