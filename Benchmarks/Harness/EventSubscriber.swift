import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// One Server-Sent Events subscriber: a connection to `GET /v1/events`, reading each event's
/// `"sent"` (the update's scheduled send time, in this process's monotonic nanoseconds) and
/// recording how long it took to arrive.
final class EventSubscriber: Sendable {
    private let channel: any Channel
    private let reader: SSEReader

    private init(channel: any Channel, reader: SSEReader) {
        self.channel = channel
        self.reader = reader
    }

    /// Subscribes; returns once the server has said `: connected`.
    static func connect(port: Int, path: String, key: String) async throws -> EventSubscriber {
        let reader = SSEReader()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(reader)
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
        let connected = channel.eventLoop.makePromise(of: Void.self)
        var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: path)
        head.headers.add(name: "Host", value: "127.0.0.1:\(port)")
        head.headers.add(name: "Authorization", value: "Bearer \(key)")
        head.headers.add(name: "Accept", value: "text/event-stream")
        channel.eventLoop.execute {
            reader.connected = connected
            channel.write(HTTPClientRequestPart.head(head), promise: nil)
            channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        }
        try await connected.futureResult.get()
        return EventSubscriber(channel: channel, reader: reader)
    }

    /// Starts (or restarts) recording: latencies of events that arrive from now on.
    func record(_ on: Bool) async throws {
        let reader = self.reader
        try await channel.eventLoop.submit { reader.recording = on }.get()
    }

    /// The latencies recorded, in nanoseconds.
    func latencies() async throws -> [UInt64] {
        let reader = self.reader
        return try await channel.eventLoop.submit { reader.latencies }.get()
    }

    func close() async {
        try? await channel.close()
    }
}

private final class SSEReader: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPClientResponsePart
    var connected: EventLoopPromise<Void>?
    var recording = false
    var latencies: [UInt64] = []
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
        let now = DispatchTime.now().uptimeNanoseconds
        while let end = pending.readableBytesView.firstRange(of: [10, 10]) {
            let length = end.upperBound - pending.readerIndex
            let message = pending.readSlice(length: length)!
            if let connected, message.readableBytesView.firstRange(of: Self.connectedComment) != nil {
                connected.succeed()
                self.connected = nil
                continue
            }
            guard recording, let sent = Self.sent(in: message) else { continue }
            latencies.append(now > sent ? now - sent : 0)
        }
        pending.discardReadBytes()
    }

    private static let marker = Array(#""sent":"#.utf8)
    private static let connectedComment = Array(": connected".utf8)

    /// The digits after `"sent":`.
    static func sent(in message: ByteBuffer) -> UInt64? {
        let bytes = message.readableBytesView
        guard let found = bytes.firstRange(of: marker) else { return nil }
        var value: UInt64 = 0
        var index = found.upperBound
        while index < bytes.endIndex, bytes[index] >= 48, bytes[index] <= 57 {
            value = value * 10 + UInt64(bytes[index] - 48)
            index += 1
        }
        return value
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        connected?.fail(error)
        connected = nil
        context.close(promise: nil)
    }
}
