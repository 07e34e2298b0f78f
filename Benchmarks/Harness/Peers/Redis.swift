import Foundation
import NIOCore

/// Redis with an append-only file fsynced every second, speaking RESP2: an update is `SET a<i>`
/// and `PUBLISH d<d>` pipelined together (one round trip, both replies awaited), a subscriber
/// `SUBSCRIBE d<d>`.
enum RESP: PeerProtocol {
    static let label = "redis (AOF, appendfsync everysec)"
    static let subscription = "SUBSCRIBE"

    static func launch(_ systems: Systems) async throws -> ServerUnderTest {
        try await systems.startPeer("redis", executable: systems.redisServer) { directory, port in
            [
                "--port", "\(port)", "--bind", "127.0.0.1", "--dir", directory.path,
                "--appendonly", "yes", "--appendfsync", "everysec", "--save", "",
                // As many clients as the file limit allows (Redis lowers it to fit, keeping 32 spare).
                "--maxclients", "\(FileLimit.current)",
            ]
        }
    }

    static func handshake(_ connection: PeerConnection<RESP>) async throws {}

    static func update(_ activity: Int, device: Int, state: String, on connection: PeerConnection<RESP>) -> (request: ByteBuffer, replies: Int) {
        var request = command("SET", "a\(activity)", state)
        request.writeImmutableBuffer(command("PUBLISH", "d\(device)", state))
        return (request, 2)
    }

    static func accepted(_ replies: [Value]) -> Bool {
        !replies.contains { if case .error = $0 { true } else { false } }
    }

    static func subscribe(device: Int, on connection: PeerConnection<RESP>) async throws {
        let reply = try await connection.request(command("SUBSCRIBE", "d\(device)"))
        guard case .array(let parts) = reply[0], case .bulk(let kind?)? = parts.first, String(buffer: kind) == "subscribe" else {
            throw HarnessError("redis SUBSCRIBE: \(reply)")
        }
    }

    indirect enum Value: Sendable {
        case simple(String), error(String), integer(Int), bulk(ByteBuffer?), array([Value])
    }

    /// A command as an array of bulk strings.
    static func command(_ words: String...) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeString("*\(words.count)\r\n")
        for word in words {
            buffer.writeString("$\(word.utf8.count)\r\n\(word)\r\n")
        }
        return buffer
    }

    static func decoder() -> Decoder { Decoder() }

    /// A pub/sub `message` is a delivery (its third part the payload); everything else a reply.
    static func role(of value: Value) -> FrameRole {
        if case .array(let parts) = value, parts.count == 3, case .bulk(let kind?) = parts[0],
            kind.readableBytesView.elementsEqual("message".utf8), case .bulk(let payload?) = parts[2]
        {
            return .delivery(payload, answer: nil)
        }
        return .reply
    }

    struct Decoder: ByteToMessageDecoder {
        typealias InboundOut = Value

        mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
            var attempt = buffer
            guard let value = try Self.value(from: &attempt) else { return .needMoreData }
            buffer = attempt
            context.fireChannelRead(NIOAny(value))
            return .continue
        }

        /// One value, or `nil` if the buffer does not hold all of it yet.
        private static func value(from buffer: inout ByteBuffer) throws -> Value? {
            guard let line = Self.line(from: &buffer), let kind = line.first else { return nil }
            let rest = String(line.dropFirst())
            switch kind {
            case "+": return .simple(rest)
            case "-": return .error(rest)
            case ":": return .integer(Int(rest) ?? 0)
            case "$":
                guard let length = Int(rest) else { throw HarnessError("RESP: bad length \(line)") }
                if length < 0 { return .bulk(nil) }
                guard buffer.readableBytes >= length + 2 else { return nil }
                let bytes = buffer.readSlice(length: length)
                buffer.moveReaderIndex(forwardBy: 2)
                return .bulk(bytes)
            case "*":
                guard let count = Int(rest) else { throw HarnessError("RESP: bad count \(line)") }
                var parts: [Value] = []
                for _ in 0..<max(count, 0) {
                    guard let part = try value(from: &buffer) else { return nil }
                    parts.append(part)
                }
                return .array(parts)
            default:
                throw HarnessError("RESP: unexpected \(line)")
            }
        }

        /// The text up to the next CRLF, consumed with it.
        private static func line(from buffer: inout ByteBuffer) -> String? {
            guard let end = buffer.offset(of: [13, 10]) else { return nil }
            let line = buffer.readString(length: end)
            buffer.moveReaderIndex(forwardBy: 2)
            return line
        }
    }
}
