import Foundation
import NIOCore
import NIOHTTP1
import NIOWebSocket

/// An Islet subscriber over WebSocket: `GET /v1/events/ws`, upgraded with NIOWebSocket's client
/// upgrader, each text message (one event's JSON) handed to the recorder.
enum WebSocketSubscriber {
    /// Subscribes; returns once the upgrade is done. Islet registers the subscriber just after
    /// it and sends no greeting, so `IsletTarget.awaitSubscribers` checks the server's count.
    static func connect(port: Int, path: String, key: String) async throws -> Subscription {
        let reader = WebSocketReader()
        let channel = try await Loopback.connect(port: port) { channel in
            let upgrader = NIOWebSocketClientUpgrader(maxFrameSize: 1 << 20) { channel, _ in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        NIOWebSocketFrameAggregator(minNonFinalFragmentSize: 0, maxAccumulatedFrameCount: 64, maxAccumulatedFrameSize: 1 << 20)
                    )
                    try channel.pipeline.syncOperations.addHandler(reader)
                    reader.upgraded?.succeed()
                }
            }
            try channel.pipeline.syncOperations.addHTTPClientHandlers(
                withClientUpgrade: (upgraders: [upgrader], completionHandler: { _ in })
            )
        }
        let upgraded = channel.eventLoop.makePromise(of: Void.self)
        // A refused upgrade closes the connection; a completed one has succeeded already.
        channel.closeFuture.whenComplete { _ in upgraded.fail(HarnessError("the WebSocket upgrade failed")) }
        requestStream(on: channel, path: path, port: port, key: key) { reader.upgraded = upgraded }
        try await upgraded.futureResult.get()
        return Subscription(channel: channel, recorder: reader.recorder)
    }
}

private final class WebSocketReader: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame
    let recorder = LatencyRecorder()
    var upgraded: EventLoopPromise<Void>?

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text, .binary:
            recorder.received(frame.unmaskedData)
        case .ping:
            let pong = WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: frame.unmaskedData)
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .connectionClose:
            context.close(promise: nil)
        default:
            break
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
