import NIOCore
import NIOPosix

/// A TCP proxy on loopback that holds every chunk of bytes for `delay` before passing it on,
/// in both directions: a database on another machine, as far as round trips go (1 ms of round
/// trip is 0.5 ms each way), on this one. Bytes keep their order; nothing is dropped.
///
/// It adds latency, not a bandwidth limit: a real network's transmission time for a few
/// hundred bytes is microseconds. The harness starts it itself; no `tc netem`, no root.
final class LatencyProxy: Sendable {
    let port: Int
    private let channel: any Channel

    private init(port: Int, channel: any Channel) {
        self.port = port
        self.channel = channel
    }

    /// Listens on a free loopback port and forwards each connection to `target` on loopback.
    static func start(to target: Int, delay: Duration) async throws -> LatencyProxy {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(.autoRead, value: false)
            .childChannelInitializer { inbound in
                ClientBootstrap(group: inbound.eventLoop)
                    .channelOption(.socketOption(.tcp_nodelay), value: 1)
                    .connect(host: "127.0.0.1", port: target)
                    .flatMap { outbound in
                        inbound.pipeline.addHandler(Delay(peer: outbound, delay: delay)).flatMap {
                            outbound.pipeline.addHandler(Delay(peer: inbound, delay: delay))
                        }.map { inbound.read() }
                    }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        guard let port = channel.localAddress?.port else { throw HarnessError("the latency proxy has no port") }
        return LatencyProxy(port: port, channel: channel)
    }

    func stop() {
        channel.close(promise: nil)
    }

    /// Passes what one side reads to the other `delay` later; closes the other when one closes.
    private final class Delay: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        let peer: any Channel
        let delay: TimeAmount

        init(peer: any Channel, delay: Duration) {
            self.peer = peer
            let (seconds, attoseconds) = delay.components
            self.delay = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        }

        func channelActive(context: ChannelHandlerContext) {
            context.read()
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let bytes = unwrapInboundIn(data)
            let peer = self.peer
            // Every chunk waits the same time, so they leave in the order they came.
            context.eventLoop.scheduleTask(in: delay) { peer.writeAndFlush(bytes, promise: nil) }
        }

        func channelReadComplete(context: ChannelHandlerContext) {
            context.read()
        }

        func channelInactive(context: ChannelHandlerContext) {
            let peer = self.peer
            context.eventLoop.scheduleTask(in: delay) { peer.close(promise: nil) }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }
    }
}
