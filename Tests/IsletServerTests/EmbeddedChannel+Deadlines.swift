import NIOCore
import NIOEmbedded
import Testing

extension EmbeddedChannel {
    /// A connected channel with `handlers`, as a server's child channel is once set up.
    static func connected(_ handlers: [any ChannelHandler]) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandlers(handlers)
        let connected = channel.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: 1))
        channel.embeddedEventLoop.run()
        try connected.wait()
        return channel
    }

    /// Moves the clock to a second short of `delay` and checks the channel is open, then two
    /// seconds on and checks it closed.
    func expectClosed(after delay: TimeAmount, sourceLocation: SourceLocation = #_sourceLocation) {
        embeddedEventLoop.advanceTime(by: delay - .seconds(1))
        #expect(isActive, "closed before its deadline", sourceLocation: sourceLocation)
        embeddedEventLoop.advanceTime(by: .seconds(2))
        #expect(!isActive, "still open after its deadline", sourceLocation: sourceLocation)
    }
}
