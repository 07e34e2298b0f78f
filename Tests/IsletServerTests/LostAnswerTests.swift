import Foundation
import IsletClient
import IsletCore
import NIOCore
import NIOPosix
import Synchronization
import IsletTestSupport
import Testing

/// A change whose answer is lost on the way back (docs/audiences.md, "Exactly once under
/// retries"): a relay in front of Islet passes the first request through and, when Islet's
/// answer comes back, closes the client's connection instead. IsletClient sends the change
/// again under its own `Idempotency-Key`, and Islet answers it from the first, doing nothing
/// twice.
@Suite("A lost answer", .hangDetector)
struct LostAnswerTests {
    @Test func aSendWhoseAnswerIsLostIsSentAgainAndMadeOnce() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.rides")
            try await LostAnswerRelay.with(to: islet.port) { relay in
                let client = IsletClient(server: "http://127.0.0.1:\(relay.port)", key: key, http: islet.http)
                let body = SendBody(action: .end, key: "match-123", audience: .all, at: Date(timeIntervalSince1970: 4_102_444_800))
                let send = try await client.createSend(bundleId: "com.example.rides", body)
                #expect(relay.dropped == 1, "the first answer was lost")
                let sends = try await islet.isletClient(key: key).sends(bundleId: "com.example.rides")
                #expect(sends.map(\.id) == [send.id], "made once, and the retry answered with it")
            }
        }
    }
}

/// A TCP relay to a port on this machine that drops the first answer it relays: it closes the
/// client's connection when the first bytes come back.
final class LostAnswerRelay: Sendable {
    let port: Int
    private let drops = Atomic<Int>(0)
    var dropped: Int { drops.load(ordering: .relaxed) }

    private init(port: Int) {
        self.port = port
    }

    static func with<T: Sendable>(to target: Int, _ body: (LostAnswerRelay) async throws -> T) async throws -> T {
        let group = MultiThreadedEventLoopGroup.singleton
        let server = try await ServerBootstrap(group: group).bind(host: "127.0.0.1", port: 0) { channel in
            channel.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel) }
        }
        let relay = LostAnswerRelay(port: server.channel.localAddress?.port ?? 0)
        let accepting = Task {
            try await server.executeThenClose { connections in
                try await withThrowingDiscardingTaskGroup { relays in
                    for try await connection in connections {
                        relays.addTask { try? await relay.relay(connection, to: target, group: group) }
                    }
                }
            }
        }
        defer {
            accepting.cancel()
            server.channel.close(promise: nil)
        }
        return try await body(relay)
    }

    private func relay(_ inbound: NIOAsyncChannel<ByteBuffer, ByteBuffer>, to target: Int, group: any EventLoopGroup) async throws {
        let outbound = try await ClientBootstrap(group: group).connect(host: "127.0.0.1", port: target) { channel in
            channel.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel) }
        }
        try await inbound.executeThenClose { clientIn, clientOut in
            try await outbound.executeThenClose { serverIn, serverOut in
                try await withThrowingTaskGroup(of: Void.self) { pair in
                    pair.addTask {
                        for try await bytes in clientIn { try await serverOut.write(bytes) }
                    }
                    pair.addTask {
                        for try await bytes in serverIn {
                            // The first answer relayed is lost: the client's connection ends instead.
                            if self.drops.compareExchange(expected: 0, desired: 1, ordering: .relaxed).exchanged { return }
                            try await clientOut.write(bytes)
                        }
                    }
                    // Either side done: both are.
                    try await pair.next()
                    pair.cancelAll()
                }
            }
        }
    }
}
