import NIOCore
import NIOPosix
import Synchronization

/// A TCP link to a loopback port that holds what crosses it for `delay` each way, as the network
/// between two machines does. `cut()` drops what is on its way and refuses new connections, as
/// the outage of a zone cuts its primary off: a standby replicating through it receives only what
/// had arrived (docs/cluster.md §7).
///
/// It runs on NIO's event loops alone, never on Swift's shared executor: a test that blocks one
/// of that executor's threads waiting for the standby (`PostgresServer(standbyOf:)` does) must
/// not hold up the bytes the standby is waiting for.
final class DelayedLink: Sendable {
    /// The port to connect to instead of the target's.
    let port: Int
    private let server: any Channel
    /// Every connection's two ends, to close at the cut.
    private let ends = Ends()

    init(to target: Int, delay: Duration) async throws {
        let ends = self.ends
        let amount = TimeAmount.nanoseconds(Int64(delay.components.seconds) * 1_000_000_000 + delay.components.attoseconds / 1_000_000_000)
        server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { near in
                near.eventLoop.makeCompletedFuture {
                    let toFar = Carrier(delay: amount)
                    try near.pipeline.syncOperations.addHandler(toFar)
                    ends.channels.withLock { $0.append(near) }
                    // The far end on the same event loop: each carrier's partner is touched there only.
                    let farEnd = ClientBootstrap(group: near.eventLoop)
                        .channelInitializer { far in
                            far.eventLoop.makeCompletedFuture {
                                let toNear = Carrier(delay: amount)
                                toNear.partner = near
                                try far.pipeline.syncOperations.addHandler(toNear)
                            }
                        }
                        .connect(host: "127.0.0.1", port: target)
                    farEnd.assumeIsolated().whenComplete { result in
                        switch result {
                        case .success(let far):
                            ends.channels.withLock { $0.append(far) }
                            toFar.connected(to: far, on: near.eventLoop)
                        case .failure:
                            near.close(promise: nil)
                        }
                    }
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        port = server.localAddress?.port ?? 0
    }

    /// Drops what is on its way in either direction, closes every connection and takes no more.
    func cut() async {
        try? await server.close()
        for end in ends.channels.withLock({ $0 }) {
            try? await end.close()
        }
    }
}

private final class Ends: Sendable {
    let channels = Mutex<[any Channel]>([])
}

/// One direction of one connection: what its channel reads is written to the partner `delay`
/// later, in the order read. Touched on its channel's event loop only.
private final class Carrier: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    let delay: TimeAmount
    /// The other end; `nil` until it is connected (what is read meanwhile waits).
    var partner: (any Channel)?
    private var onTheWay = CircularBuffer<(due: NIODeadline, chunk: ByteBuffer)>()
    private var next: Scheduled<Void>?
    private var closed = false

    init(delay: TimeAmount) {
        self.delay = delay
    }

    func connected(to partner: any Channel, on loop: any EventLoop) {
        self.partner = partner
        deliver(on: loop)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        onTheWay.append((.now() + delay, unwrapInboundIn(data)))
        if next == nil { deliver(on: context.eventLoop) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        // What is on its way is dropped with the link, and the other end closes.
        closed = true
        onTheWay.removeAll()
        next?.cancel()
        partner?.close(promise: nil)
        context.fireChannelInactive()
    }

    /// Writes what is due and waits for the next.
    private func deliver(on loop: any EventLoop) {
        next = nil
        guard let partner, !closed else { return }
        let now = NIODeadline.now()
        var wrote = false
        while let first = onTheWay.first, first.due <= now {
            partner.write(first.chunk, promise: nil)
            onTheWay.removeFirst()
            wrote = true
        }
        if wrote { partner.flush() }
        if let first = onTheWay.first {
            next = loop.assumeIsolated().scheduleTask(deadline: first.due) { self.deliver(on: loop) }
        }
    }
}
