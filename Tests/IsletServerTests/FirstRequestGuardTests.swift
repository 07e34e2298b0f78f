import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

@testable import IsletServer

/// The guard against connections that never send a request, on an embedded channel whose clock
/// the test moves.
@Suite("First request guard")
struct FirstRequestGuardTests {
    /// A connection with the HTTP decoder and the guard after it, as the server sets them up.
    private func connection() throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(HTTPRequestDecoder()), name: "decoder")
        try channel.pipeline.syncOperations.addHandler(FirstRequestGuard(timeout: .seconds(10)))
        let connected = channel.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: 1))
        channel.embeddedEventLoop.run()
        try connected.wait()
        return channel
    }

    @Test func aConnectionThatSendsNothingIsClosedAfterTheTimeout() throws {
        let channel = try connection()
        channel.embeddedEventLoop.advanceTime(by: .seconds(9))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .seconds(2))
        #expect(!channel.isActive)
    }

    @Test func anUpgradedConnectionOutlivesTheTimeout() throws {
        let channel = try connection()
        // A WebSocket upgrade consumes the request before the guard sees it and removes the
        // HTTP decoder: the connection is a WebSocket now, and must stay open.
        let removed = channel.pipeline.syncOperations.removeHandler(name: "decoder")
        channel.embeddedEventLoop.run()
        try removed.wait()
        channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        #expect(channel.isActive)
    }
}
