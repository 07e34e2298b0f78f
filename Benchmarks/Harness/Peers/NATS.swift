import Foundation
import NIOCore

/// NATS JetStream key-value, as `nats kv` uses it: a bucket is the stream `KV_<bucket>` on
/// `$KV.<bucket>.>`; an update is a put (`PUB $KV.bench.d<d>.a<i>` with a reply subject, waiting
/// for JetStream's ack, so the value is in the file store); a subscriber is a watch of
/// `$KV.bench.d<d>.>` (an ordered push consumer, as `nats kv watch` makes).
///
/// Every connection has its inbox, `_INBOX.<name>`: `.r` (sid 1) takes replies, `.w` (sid 2) a
/// watch's deliveries.
enum NATS: PeerProtocol {
    static let bucket = "bench"
    static let label = "nats (JetStream KV, file store, its default fsync every 2 min)"
    static let subscription = "KV watch"

    static func launch(_ systems: Systems) async throws -> ServerUnderTest {
        let server = try await systems.startPeer("nats", executable: systems.natsServer) { directory, port in
            ["-js", "-a", "127.0.0.1", "-p", "\(port)", "-sd", directory.path]
        }
        do {
            let connection = try await PeerConnection<NATS>.open(port: server.port)
            // What `nats kv add bench` sends (history 1).
            let config = #"{"name":"KV_\#(bucket)","subjects":["$KV.\#(bucket).>"],"retention":"limits","max_consumers":-1,"max_msgs":-1,"max_bytes":-1,"max_age":0,"max_msgs_per_subject":1,"max_msg_size":-1,"discard":"new","storage":"file","num_replicas":1,"duplicate_window":120000000000,"allow_rollup_hdrs":true,"deny_delete":true,"allow_direct":true}"#
            try await api("STREAM.CREATE.KV_\(bucket)", config, on: connection)
            await connection.close()
            return server
        } catch {
            server.stop()
            throw error
        }
    }

    /// `CONNECT`, the inbox subscriptions, and a `PING` whose `PONG` says all was accepted.
    static func handshake(_ connection: PeerConnection<NATS>) async throws {
        let inbox = inbox(of: connection)
        let hello = #"CONNECT {"verbose":false,"pedantic":false,"name":"islet-bench","lang":"swift","version":"0","protocol":1,"headers":true,"no_responders":true}"#
            + "\r\nSUB \(inbox).r 1\r\nSUB \(inbox).w 2\r\nPING\r\n"
        let reply = try await connection.request(ByteBuffer(string: hello))
        guard case .pong = reply[0] else { throw HarnessError("nats CONNECT: \(reply[0])") }
    }

    static func update(_ activity: Int, device: Int, state: String, on connection: PeerConnection<NATS>) -> (request: ByteBuffer, replies: Int) {
        (publish("$KV.\(bucket).d\(device).a\(activity)", state, on: connection), 1)
    }

    /// JetStream's ack (`{"stream":…,"seq":…}`), not an error or a no-responders status.
    static func accepted(_ replies: [Frame]) -> Bool {
        guard case .message(let ack) = replies[0] else { return false }
        return ack.status == nil && ack.payload.offset(of: Array(#""error""#.utf8)) == nil
    }

    /// An ordered push consumer for updates only: no acks, flow control and heartbeats.
    static func subscribe(device: Int, on connection: PeerConnection<NATS>) async throws {
        let consumer = #"{"stream_name":"KV_\#(bucket)","config":{"deliver_subject":"\#(inbox(of: connection)).w","deliver_policy":"new","ack_policy":"none","max_deliver":1,"filter_subject":"$KV.\#(bucket).d\#(device).>","replay_policy":"instant","flow_control":true,"idle_heartbeat":5000000000,"mem_storage":true,"num_replicas":1}}"#
        try await api("CONSUMER.CREATE.KV_\(bucket)", consumer, on: connection)
    }

    private static func inbox(of connection: PeerConnection<NATS>) -> String { "_INBOX.\(connection.name)" }

    /// `payload` published to `subject`, replies to the connection's inbox.
    private static func publish(_ subject: String, _ payload: String, on connection: PeerConnection<NATS>) -> ByteBuffer {
        var bytes = ByteBuffer(string: "PUB \(subject) \(inbox(of: connection)).r \(payload.utf8.count)\r\n")
        bytes.writeString(payload)
        bytes.writeString("\r\n")
        return bytes
    }

    /// Calls the JetStream API (`$JS.API.<call>`); throws its error, if any.
    private static func api(_ call: String, _ json: String, on connection: PeerConnection<NATS>) async throws {
        let reply = try await connection.request(publish("$JS.API.\(call)", json, on: connection))
        guard case .message(let answer) = reply[0] else { throw HarnessError("nats \(call): \(reply[0])") }
        let text = String(buffer: answer.payload)
        if answer.status != nil || text.contains(#""error""#) { throw HarnessError("nats \(call): \(answer.status ?? 0) \(text)") }
    }

    enum Frame: Sendable {
        case info, ok, ping, pong, error(String), message(Message)
    }

    struct Message: Sendable {
        var sid: Substring
        var reply: Substring?
        /// The status of a headers-only message (`NATS/1.0 100 …`: flow control, heartbeats).
        var status: Int?
        var payload: ByteBuffer
    }

    static func decoder() -> Decoder { Decoder() }

    static func role(of frame: Frame) -> FrameRole {
        switch frame {
        case .pong, .error: return .reply
        case .ping: return .answer(ByteBuffer(string: "PONG\r\n"))
        case .info, .ok: return .ignore
        case .message(let message) where message.sid == "1": return .reply
        case .message(let message) where message.status != nil:
            // Flow control asks for an empty reply; a heartbeat asks for nothing.
            guard let reply = message.reply else { return .ignore }
            return .answer(ByteBuffer(string: "PUB \(reply) 0\r\n\r\n"))
        case .message(let message): return .delivery(message.payload, answer: nil)
        }
    }

    struct Decoder: ByteToMessageDecoder {
        typealias InboundOut = Frame

        mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
            guard let end = buffer.offset(of: [13, 10]) else { return .needMoreData }
            let lineLength = end
            let line = buffer.getString(at: buffer.readerIndex, length: lineLength) ?? ""
            let words = line.split(separator: " ")
            let frame: Frame
            switch words.first?.uppercased() {
            case "MSG", "HMSG":
                let headers = words[0].count == 4
                // MSG <subject> <sid> [reply] <size>; HMSG <subject> <sid> [reply] <header size> <size>
                let sizes = headers ? 2 : 1
                guard words.count >= 2 + sizes, let size = Int(words[words.count - 1]),
                    let headerSize = headers ? Int(words[words.count - 2]) : 0
                else { throw HarnessError("nats: bad \(line)") }
                guard buffer.readableBytes >= lineLength + 2 + size + 2 else { return .needMoreData }
                buffer.moveReaderIndex(forwardBy: lineLength + 2)
                let head = buffer.readSlice(length: headerSize)!
                let payload = buffer.readSlice(length: size - headerSize)!
                buffer.moveReaderIndex(forwardBy: 2)
                frame = .message(Message(
                    sid: words[2], reply: words.count == 3 + sizes ? words[3] : nil, status: headers ? Self.status(head) : nil,
                    payload: payload
                ))
                context.fireChannelRead(NIOAny(frame))
                return .continue
            case "PING": frame = .ping
            case "PONG": frame = .pong
            case "+OK": frame = .ok
            case "INFO": frame = .info
            case "-ERR": frame = .error(line)
            default: throw HarnessError("nats: unexpected \(line)")
            }
            buffer.moveReaderIndex(forwardBy: lineLength + 2)
            context.fireChannelRead(NIOAny(frame))
            return .continue
        }

        /// The status code on a header block's first line (`NATS/1.0 100 Idle Heartbeat`), if any.
        private static func status(_ head: ByteBuffer) -> Int? {
            let first = String(buffer: head).prefix { $0 != "\r" }
            let parts = first.split(separator: " ")
            return parts.count > 1 ? Int(parts[1]) : nil
        }
    }
}
