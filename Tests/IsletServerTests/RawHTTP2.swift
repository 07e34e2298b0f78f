import IsletTestSupport
import NIOCore
import NIOHPACK
import NIOPosix
import NIOSSL

/// One HTTP/2 frame as it goes on the wire (RFC 9113 §4.1): a client built from these sends
/// what it likes — floods and sequences no HTTP/2 library would send — and sees every frame the
/// server answers with. Header blocks come from NIOHPACK's encoder; TLS from NIOSSL.
struct RawFrame: Sendable, Equatable, CustomStringConvertible {
    static let data: UInt8 = 0, headers: UInt8 = 1, rstStream: UInt8 = 3, settings: UInt8 = 4, ping: UInt8 = 6
    static let goAway: UInt8 = 7, continuation: UInt8 = 9
    static let endStream: UInt8 = 0x1, endHeaders: UInt8 = 0x4, ack: UInt8 = 0x1
    /// The client connection preface (RFC 9113 §3.4), without its SETTINGS frame.
    static let magic = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    var type: UInt8
    var flags: UInt8 = 0
    var stream: UInt32 = 0
    var payload: [UInt8] = []
    /// A received HEADERS frame's `:status`.
    var status: Int?

    /// The frame's bytes: the 9-byte header, then the payload.
    var bytes: [UInt8] {
        let length = UInt32(payload.count)
        return [UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF), type, flags]
            + [UInt8(stream >> 24 & 0x7F), UInt8(stream >> 16 & 0xFF), UInt8(stream >> 8 & 0xFF), UInt8(stream & 0xFF)]
            + payload
    }

    /// The error code of a RST_STREAM or GOAWAY frame.
    var errorCode: UInt32? {
        let offset = type == Self.rstStream ? 0 : type == Self.goAway ? 4 : nil
        guard let offset, payload.count >= offset + 4 else { return nil }
        return payload[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// A GOAWAY frame's debug data, as text.
    var debugData: String {
        type == Self.goAway && payload.count > 8 ? String(decoding: payload[8...], as: UTF8.self) : ""
    }

    var endsStream: Bool { (type == Self.headers || type == Self.data) && flags & Self.endStream != 0 }

    var description: String { "frame(type \(type), flags \(flags), stream \(stream), \(payload.count) bytes)" }

    static func headers(stream: UInt32, block: [UInt8], endStream: Bool, endHeaders: Bool = true) -> RawFrame {
        RawFrame(
            type: headers, flags: (endStream ? Self.endStream : 0) | (endHeaders ? Self.endHeaders : 0), stream: stream,
            payload: block
        )
    }

    static func rstStream(stream: UInt32, code: UInt32 = 8) -> RawFrame {
        RawFrame(type: rstStream, stream: stream, payload: [UInt8(code >> 24), UInt8(code >> 16 & 0xFF), UInt8(code >> 8 & 0xFF), UInt8(code & 0xFF)])
    }

    static func pingFrame(_ value: UInt8 = 1) -> RawFrame {
        RawFrame(type: ping, payload: Array(repeating: value, count: 8))
    }
}

/// A client connection speaking raw HTTP/2 frames over TLS, for attacks on the APNs endpoint.
struct RawHTTP2: Sendable {
    let channel: any Channel
    /// The frames the server sends, in order; finishes when the connection closes.
    let frames: AsyncStream<RawFrame>

    /// Connects to the APNs endpoint on `port`, trusting the authority at `authorityPath`.
    static func connect(port: Int, authorityPath: String) async throws -> RawHTTP2 {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .file(authorityPath)
        tls.applicationProtocols = ["h2"]
        let context = try NIOSSLContext(configuration: tls)
        let (frames, continuation) = AsyncStream<RawFrame>.makeStream()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: context, serverHostname: "localhost"))
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(RawFrameDecoder()))
                    try channel.pipeline.syncOperations.addHandler(FrameCollector(continuation: continuation))
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
        return RawHTTP2(channel: channel, frames: frames)
    }

    /// Sends the client preface: the magic, then an empty SETTINGS frame.
    func sendPreface() async throws {
        try await send([RawFrame(type: RawFrame.settings)], preface: true)
    }

    /// Sends frames as they are, in one write.
    func send(_ frames: [RawFrame], preface: Bool = false) async throws {
        var buffer = channel.allocator.buffer(capacity: frames.reduce(0) { $0 + 9 + $1.payload.count } + 24)
        if preface { buffer.writeBytes(RawFrame.magic) }
        for frame in frames { buffer.writeBytes(frame.bytes) }
        try await channel.writeAndFlush(buffer)
    }

    /// Reads frames until `done` is true of those read so far or the server closes the
    /// connection; fails the test after `seconds` rather than hang.
    func read(seconds: Double = 10, until done: @escaping @Sendable ([RawFrame]) -> Bool = { _ in false }) async throws
        -> (frames: [RawFrame], closed: Bool)
    {
        let frames = self.frames
        return try await within(seconds) {
            var seen: [RawFrame] = []
            for await frame in frames {
                seen.append(frame)
                if done(seen) { return (seen, false) }
            }
            return (seen, true)
        }
    }

    func close() async {
        try? await channel.close()
    }

    /// A header block for a push to the APNs endpoint: a device push with a provider token
    /// that is no token at all, so the answer is `403` from the headers alone.
    static func pushHeaders(encoder: inout HPACKEncoder, authorization: String = "bearer not-a-token") throws -> [UInt8] {
        try block(encoder: &encoder, [
            (":method", "POST"), (":scheme", "https"), (":path", "/3/device/" + String(repeating: "ab", count: 32)),
            (":authority", "localhost"), ("authorization", authorization),
            ("apns-topic", "com.example.delivery.push-type.liveactivity"), ("apns-push-type", "liveactivity"),
        ])
    }

    /// Encodes headers with `encoder`, which keeps its dynamic table from block to block.
    static func block(encoder: inout HPACKEncoder, _ headers: [(String, String)]) throws -> [UInt8] {
        var buffer = ByteBuffer()
        try encoder.encode(headers: HPACKHeaders(headers), to: &buffer)
        return Array(buffer.readableBytesView)
    }
}

/// Splits the server's bytes into frames.
private struct RawFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = RawFrame

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let header = buffer.getBytes(at: buffer.readerIndex, length: 9) else { return .needMoreData }
        let length = Int(header[0]) << 16 | Int(header[1]) << 8 | Int(header[2])
        guard buffer.readableBytes >= 9 + length else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: 9)
        let stream = header[5...8].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } & 0x7FFF_FFFF
        let frame = RawFrame(type: header[3], flags: header[4], stream: stream, payload: buffer.readBytes(length: length) ?? [])
        context.fireChannelRead(NIOAny(frame))
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        try decode(context: context, buffer: &buffer)
    }
}

/// Hands the frames to the test, with each response's status, and says when the connection is
/// gone.
private final class FrameCollector: ChannelInboundHandler {
    typealias InboundIn = RawFrame
    let continuation: AsyncStream<RawFrame>.Continuation
    private var decoder = HPACKDecoder(allocator: ByteBufferAllocator())

    init(continuation: AsyncStream<RawFrame>.Continuation) {
        self.continuation = continuation
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var frame = unwrapInboundIn(data)
        // Islet's server neither pads nor prioritises, and its header blocks fit one frame.
        if frame.type == RawFrame.headers, frame.flags & 0x28 == 0 {
            var block = ByteBuffer(bytes: frame.payload)
            frame.status = (try? decoder.decodeHeaders(from: &block))?.first(name: ":status").flatMap { Int($0) }
        }
        continuation.yield(frame)
    }

    func channelInactive(context: ChannelHandlerContext) {
        continuation.finish()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
