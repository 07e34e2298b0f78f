import Foundation
import IsletTestSupport
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// A hostile push or webhook host: it completes TLS, picks `h2` by ALPN, reads everything the
/// client sends (its HTTP/2 preface and `SETTINGS`) and never writes a byte — an HTTP/2 server
/// that never sends its own `SETTINGS`. Its certificate is signed by a test authority of its own.
final class SilentHTTP2Server: Sendable {
    let port: Int
    /// The authority's certificate (PEM), for a client to trust.
    let authority: String
    private let channel: any Channel
    private let directory: URL
    private let firstBytes: AsyncStream<Void>
    private let received: Received

    private final class Received: Sendable {
        let bytes = Atomic<Int>(0)
        let signal: AsyncStream<Void>.Continuation
        init(_ signal: AsyncStream<Void>.Continuation) { self.signal = signal }
    }

    /// Bytes read after the TLS handshake, from every connection.
    var bytesReceived: Int { received.bytes.load(ordering: .relaxed) }

    init() async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("islet-silent-\(UUID().uuidString)")
        let issuer = try TestAuthority(in: directory)
        let issued = try issuer.issue(for: ["localhost", "127.0.0.1"])
        authority = try String(contentsOfFile: issuer.certificate, encoding: .utf8)
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(issued.certificate).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: issued.key, format: .pem))
        )
        tls.applicationProtocols = ["h2"]
        let context = try NIOSSLContext(configuration: tls)
        (firstBytes, received) = {
            let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
            return (stream, Received(continuation))
        }()
        let received = self.received
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                    try channel.pipeline.syncOperations.addHandler(Swallow(received: received))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        port = channel.localAddress?.port ?? 0
    }

    /// Returns once a client has sent something over TLS (its preface).
    func waitForAClient() async {
        for await _ in firstBytes { return }
    }

    func close() async {
        try? await channel.close()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Reads and says nothing.
    private final class Swallow: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let received: Received
        init(received: Received) { self.received = received }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            received.bytes.add(unwrapInboundIn(data).readableBytes, ordering: .relaxed)
            received.signal.yield()
        }
    }
}
