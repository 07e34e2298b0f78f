import NIOCore
import NIOPosix

/// A TCP link to a loopback port that holds what crosses it for `delay` each way, as the network
/// between two machines does. `cut()` drops what is on its way and refuses new connections, as
/// the outage of a zone cuts its primary off: a standby replicating through it receives only what
/// had arrived (docs/cluster.md §7).
final class DelayedLink: Sendable {
    /// The port to connect to instead of the target's.
    let port: Int
    private let relays: Task<Void, Never>

    init(to target: Int, delay: Duration) async throws {
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: "127.0.0.1", port: 0) { channel in
                channel.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel) }
            }
        port = server.channel.localAddress?.port ?? 0
        relays = Task {
            await withDiscardingTaskGroup { group in
                try? await server.executeThenClose { connections in
                    for try await near in connections {
                        group.addTask { await Self.relay(near, to: target, delay: delay) }
                    }
                }
            }
        }
    }

    /// Drops what is on its way in either direction, closes every connection and takes no more.
    func cut() async {
        relays.cancel()
        await relays.value
    }

    private static func relay(_ near: NIOAsyncChannel<ByteBuffer, ByteBuffer>, to target: Int, delay: Duration) async {
        do {
            let far = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: "127.0.0.1", port: target) { channel in
                channel.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel) }
            }
            try await near.executeThenClose { nearIn, nearOut in
                try await far.executeThenClose { farIn, farOut in
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask { try await carry(nearIn, to: farOut, delay: delay) }
                        group.addTask { try await carry(farIn, to: nearOut, delay: delay) }
                        // One side closing closes the link.
                        try await group.next()
                        group.cancelAll()
                    }
                }
            }
        } catch {
            try? await near.channel.close()
        }
    }

    /// One direction: each chunk is written `delay` after it was read, in the order read.
    private static func carry(
        _ inbound: NIOAsyncChannelInboundStream<ByteBuffer>, to outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>, delay: Duration
    ) async throws {
        let (onTheWay, sending) = AsyncStream<(due: ContinuousClock.Instant, chunk: ByteBuffer)>.makeStream()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                defer { sending.finish() }
                for try await chunk in inbound { sending.yield((.now + delay, chunk)) }
            }
            group.addTask {
                for await (due, chunk) in onTheWay {
                    try await Task.sleep(until: due)
                    try await outbound.write(chunk)
                }
            }
            try await group.waitForAll()
        }
    }
}
