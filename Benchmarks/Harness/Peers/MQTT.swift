import Foundation
import NIOCore

/// Mosquitto with persistence (its file saved every 30 s), over MQTT 3.1.1: an update is a
/// retained QoS 1 `PUBLISH` to `d<d>/a<i>` answered by `PUBACK`; a subscriber a QoS 1
/// `SUBSCRIBE` to `d<d>/#`. A packet is a fixed header (type and flags, then the remaining
/// length) and a body.
enum MQTT: PeerProtocol {
    static let label = "mosquitto (retained QoS 1, persistence file saved every 30 s)"
    static let subscription = "SUBSCRIBE QoS 1"

    static func launch(_ systems: Systems) async throws -> ServerUnderTest {
        try await systems.startPeer("mosquitto", executable: systems.mosquitto) { directory, port in
            let configuration = directory.appendingPathComponent("mosquitto.conf")
            try """
            listener \(port) 127.0.0.1
            allow_anonymous true
            persistence true
            persistence_location \(directory.path)/
            autosave_interval 30
            # Keeps the user it was started as (as root it would switch to "mosquitto", who cannot write here).
            user \(NSUserName())
            """.write(to: configuration, atomically: true, encoding: .utf8)
            return ["-c", configuration.path]
        }
    }

    struct Packet: Sendable {
        var header: UInt8
        var body: ByteBuffer

        var kind: UInt8 { header >> 4 }
    }

    /// A clean session with keep-alive off (runs are short), answered by `CONNACK`.
    static func handshake(_ connection: PeerConnection<MQTT>) async throws {
        var body = ByteBuffer()
        writeString("MQTT", to: &body)
        body.writeInteger(UInt8(4))  // protocol level 3.1.1
        body.writeInteger(UInt8(0x02))  // clean session
        body.writeInteger(UInt16(0))  // keep-alive off
        writeString("bench-\(connection.name)", to: &body)
        let reply = try await connection.request(packet(0x10, body))
        guard reply[0].kind == 2, reply[0].body.getInteger(at: reply[0].body.readerIndex + 1, as: UInt8.self) == 0 else {
            throw HarnessError("mosquitto refused CONNECT")
        }
    }

    /// Retained, QoS 1. With one publish in flight per connection, packet id 1 is always free
    /// again by the next one (its `PUBACK` has come).
    static func update(_ activity: Int, device: Int, state: String, on connection: PeerConnection<MQTT>) -> (request: ByteBuffer, replies: Int) {
        var body = ByteBuffer()
        writeString("d\(device)/a\(activity)", to: &body)
        body.writeInteger(UInt16(1))
        body.writeString(state)
        return (packet(0x33, body), 1)
    }

    static func accepted(_ replies: [Packet]) -> Bool { replies[0].kind == 4 }

    static func subscribe(device: Int, on connection: PeerConnection<MQTT>) async throws {
        var body = ByteBuffer()
        body.writeInteger(UInt16(1))
        writeString("d\(device)/#", to: &body)
        body.writeInteger(UInt8(1))  // QoS 1
        let granted = try await connection.request(packet(0x82, body))
        // SUBACK's return code: the QoS granted, or 0x80 for a refusal.
        guard granted[0].kind == 9, granted[0].body.getInteger(at: granted[0].body.readerIndex + 2, as: UInt8.self) == 1 else {
            throw HarnessError("mosquitto SUBSCRIBE refused")
        }
    }

    private static func packet(_ header: UInt8, _ body: ByteBuffer) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeInteger(header)
        var length = body.readableBytes
        repeat {
            var byte = UInt8(length % 128)
            length /= 128
            if length > 0 { byte |= 0x80 }
            buffer.writeInteger(byte)
        } while length > 0
        buffer.writeImmutableBuffer(body)
        return buffer
    }

    private static func writeString(_ text: String, to buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt16(text.utf8.count))
        buffer.writeString(text)
    }

    static func decoder() -> Decoder { Decoder() }

    /// `PUBLISH` is a delivery (acknowledged with `PUBACK` at QoS 1); `PINGRESP` nothing; the
    /// rest (`CONNACK`, `PUBACK`, `SUBACK`) replies.
    static func role(of packet: Packet) -> FrameRole {
        switch packet.kind {
        case 3:
            var body = packet.body
            guard let topicLength = body.readInteger(as: UInt16.self) else { return .ignore }
            body.moveReaderIndex(forwardBy: Int(topicLength))
            let qos = (packet.header >> 1) & 3
            guard qos > 0 else { return .delivery(body, answer: nil) }
            guard let id = body.readInteger(as: UInt16.self) else { return .ignore }
            var acknowledgement = ByteBuffer()
            acknowledgement.writeInteger(UInt8(0x40))
            acknowledgement.writeInteger(UInt8(2))
            acknowledgement.writeInteger(id)
            return .delivery(body, answer: acknowledgement)
        case 13: return .ignore
        default: return .reply
        }
    }

    struct Decoder: ByteToMessageDecoder {
        typealias InboundOut = Packet

        mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
            var view = buffer
            guard let header = view.readInteger(as: UInt8.self) else { return .needMoreData }
            var length = 0, multiplier = 1
            while true {
                guard let byte = view.readInteger(as: UInt8.self) else { return .needMoreData }
                length += Int(byte & 0x7F) * multiplier
                multiplier *= 128
                if byte & 0x80 == 0 { break }
                guard multiplier <= 128 * 128 * 128 else { throw HarnessError("MQTT: bad remaining length") }
            }
            guard let body = view.readSlice(length: length) else { return .needMoreData }
            buffer = view
            context.fireChannelRead(NIOAny(Packet(header: header, body: body)))
            return .continue
        }
    }
}
