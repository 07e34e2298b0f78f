import Foundation
import NIOCore

/// A peer's wire protocol and how the workloads use it: how to cut bytes into frames, what each
/// frame means, and the few exchanges an update and a subscription take. With it,
/// `PeerTarget` and `PeerPublisher` drive every peer the same way.
protocol PeerProtocol: SendableMetatype {
    associatedtype Decoder: ByteToMessageDecoder & SendableMetatype where Decoder.InboundOut: Sendable

    /// The system and its durability setting, as result lines name it.
    static var label: String { get }
    /// How a subscriber subscribes, as result lines name it.
    static var subscription: String { get }

    /// Starts the server on a fresh scratch directory, ready for the fleet's updates.
    static func launch(_ systems: Systems) async throws -> ServerUnderTest

    static func decoder() -> Decoder
    static func role(of frame: Decoder.InboundOut) -> FrameRole
    /// Opens the session on a new connection; returns once the server has accepted it.
    static func handshake(_ connection: PeerConnection<Self>) async throws
    /// What sets activity `activity` (on `device`) to `state`, and how many replies acknowledge it.
    static func update(_ activity: Int, device: Int, state: String, on connection: PeerConnection<Self>) -> (request: ByteBuffer, replies: Int)
    /// Whether those replies accept the update.
    static func accepted(_ replies: [Decoder.InboundOut]) -> Bool
    /// Subscribes the connection to every activity of `device`; returns once subscribed.
    static func subscribe(device: Int, on connection: PeerConnection<Self>) async throws
}

/// What a frame from a peer means to the connection that reads it.
enum FrameRole {
    /// Answers the oldest request still waiting.
    case reply
    /// A subscribed message: its payload, and what acknowledges it (MQTT's `PUBACK`), if anything.
    case delivery(ByteBuffer, answer: ByteBuffer?)
    /// Wants an answer and nothing else (NATS's `PING`, a JetStream flow-control request).
    case answer(ByteBuffer)
    case ignore
}

/// One connection to a peer: requests whose replies come back in order, and subscribed messages
/// handed to a latency recorder. Every peer's publisher and subscriber is one of these.
final class PeerConnection<P: PeerProtocol>: Sendable {
    typealias Frame = P.Decoder.InboundOut
    private let channel: any Channel
    private let handler: PeerHandler<P>
    /// Unique to this connection: NATS names its inbox after it, MQTT its client id.
    let name = UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()

    private init(channel: any Channel, handler: PeerHandler<P>) {
        self.channel = channel
        self.handler = handler
    }

    /// Connects and opens the session.
    static func open(port: Int) async throws -> PeerConnection {
        let handler = PeerHandler<P>()
        let channel = try await Loopback.connect(port: port) { channel in
            try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(P.decoder()))
            try channel.pipeline.syncOperations.addHandler(handler)
        }
        let connection = PeerConnection(channel: channel, handler: handler)
        do {
            try await P.handshake(connection)
        } catch {
            await connection.close()
            throw error
        }
        return connection
    }

    /// Sends `bytes` and returns the next `replies` reply frames.
    func request(_ bytes: ByteBuffer, replies: Int = 1) async throws -> [Frame] {
        let promise = channel.eventLoop.makePromise(of: [Frame].self)
        let channel = self.channel
        let handler = self.handler
        channel.eventLoop.execute {
            handler.expect(replies, promise)
            channel.writeAndFlush(bytes, promise: nil)
        }
        return try await promise.futureResult.get()
    }

    /// This connection as a subscriber: what it receives from now on goes to the recorder.
    var subscription: Subscription { Subscription(channel: channel, recorder: handler.recorder) }

    func close() async {
        try? await channel.close()
    }
}

private final class PeerHandler<P: PeerProtocol>: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = P.Decoder.InboundOut
    typealias OutboundOut = ByteBuffer
    let recorder = LatencyRecorder()
    private var waiting: [(count: Int, frames: [InboundIn], promise: EventLoopPromise<[InboundIn]>)] = []
    private var answered = false

    /// On the channel's event loop.
    func expect(_ count: Int, _ promise: EventLoopPromise<[InboundIn]>) {
        waiting.append((count, [], promise))
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch P.role(of: frame) {
        case .reply:
            guard !waiting.isEmpty else { return }
            waiting[0].frames.append(frame)
            if waiting[0].frames.count == waiting[0].count {
                let done = waiting.removeFirst()
                done.promise.succeed(done.frames)
            }
        case .delivery(let payload, let answer):
            recorder.received(payload)
            if let answer { write(answer, context: context) }
        case .answer(let answer):
            write(answer, context: context)
        case .ignore:
            break
        }
    }

    /// Answers go out together once the bytes read so far are handled.
    private func write(_ bytes: ByteBuffer, context: ChannelHandlerContext) {
        context.write(wrapOutboundOut(bytes), promise: nil)
        answered = true
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if answered { context.flush() }
        answered = false
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        failWaiting(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        failWaiting(ChannelError.ioOnClosedChannel)
    }

    private func failWaiting(_ error: any Error) {
        let waiting = self.waiting
        self.waiting = []
        waiting.forEach { $0.promise.fail(error) }
    }
}
