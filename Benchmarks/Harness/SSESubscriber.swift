import Foundation
import NIOCore
import NIOHTTP1

/// An Islet subscriber over Server-Sent Events: `GET /v1/events`, each event's data handed to
/// the recorder.
enum SSESubscriber {
    /// Subscribes; returns once the server has said `: connected`.
    static func connect(port: Int, path: String, key: String) async throws -> Subscription {
        let reader = SSEReader()
        let channel = try await Loopback.connect(port: port) { channel in
            try channel.pipeline.syncOperations.addHTTPClientHandlers()
            try channel.pipeline.syncOperations.addHandler(reader)
        }
        let connected = channel.eventLoop.makePromise(of: Void.self)
        requestStream(on: channel, path: path, port: port, key: key, headers: [("Accept", "text/event-stream")]) {
            reader.connected = connected
        }
        try await connected.futureResult.get()
        return Subscription(channel: channel, recorder: reader.recorder)
    }
}

/// Writes `GET path` with the app's key on a new stream connection, having first run `arm` on
/// its event loop (where the reader arms the promise the answer completes).
func requestStream(
    on channel: any Channel, path: String, port: Int, key: String, headers: [(String, String)] = [], arm: @escaping @Sendable () -> Void
) {
    var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: path)
    head.headers.add(name: "Host", value: "127.0.0.1:\(port)")
    head.headers.add(name: "Authorization", value: "Bearer \(key)")
    for (name, value) in headers { head.headers.add(name: name, value: value) }
    let request = head
    channel.eventLoop.execute {
        arm()
        channel.write(HTTPClientRequestPart.head(request), promise: nil)
        channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
    }
}

private final class SSEReader: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPClientResponsePart
    var connected: EventLoopPromise<Void>?
    let recorder = LatencyRecorder()
    private var pending = ByteBuffer()

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            if head.status != .ok { connected?.fail(HarnessError("subscribe: \(head.status)")) }
        case .body(var part):
            pending.writeBuffer(&part)
            scan()
        case .end:
            connected?.fail(HarnessError("the stream ended"))
        }
    }

    /// Reads complete messages (up to a blank line) from what has arrived.
    private func scan() {
        while let end = pending.offset(of: Self.blankLine) {
            let message = pending.readSlice(length: end + Self.blankLine.count)!
            if let connected, message.offset(of: Self.connectedComment) != nil {
                connected.succeed()
                self.connected = nil
                continue
            }
            recorder.received(message)
        }
        pending.discardReadBytes()
    }

    private static let connectedComment = Array(": connected".utf8)
    private static let blankLine: [UInt8] = [10, 10]

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        connected?.fail(error)
        connected = nil
        context.close(promise: nil)
    }
}
