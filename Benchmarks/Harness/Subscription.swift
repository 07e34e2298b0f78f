import Foundation
import NIOCore
import NIOPosix

/// One subscriber's connection, whatever the system: its channel's protocol handler hands every
/// delivered message to the `recorder`, which keeps the arrivals of measured updates.
final class Subscription: Sendable {
    private let channel: any Channel
    private let recorder: LatencyRecorder

    init(channel: any Channel, recorder: LatencyRecorder) {
        self.channel = channel
        self.recorder = recorder
    }

    /// Records the arrivals of updates sent (scheduled) at or after `sent`, in uptime nanoseconds.
    func record(from sent: UInt64) async throws {
        let recorder = self.recorder
        try await channel.eventLoop.submit { recorder.from = sent }.get()
    }

    func arrivals() async throws -> [Arrival] {
        let recorder = self.recorder
        return try await channel.eventLoop.submit { recorder.arrivals }.get()
    }

    func close() async {
        try? await channel.close()
    }
}

/// An update's arrival at one subscriber: its scheduled send time and how long it took.
struct Arrival: Sendable {
    var sent: UInt64
    var latency: UInt64
}

/// Reads the `"sent":<uptime ns>` every measured update carries and keeps its arrival; touched
/// only on its channel's event loop.
final class LatencyRecorder: @unchecked Sendable {
    fileprivate var from = UInt64.max
    fileprivate var arrivals: [Arrival] = []

    /// A message arrived now: records it if it is a measured update.
    func received(_ message: ByteBuffer) {
        guard let sent = Self.sent(in: message), sent >= from else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        arrivals.append(Arrival(sent: sent, latency: now > sent ? now - sent : 0))
    }

    private static let marker = Array(#""sent":"#.utf8)

    /// The digits after `"sent":`.
    static func sent(in message: ByteBuffer) -> UInt64? {
        guard let found = message.offset(of: marker) else { return nil }
        return message.withUnsafeReadableBytes { bytes in
            var value: UInt64 = 0
            var index = found + marker.count
            while index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 {
                value = value * 10 + UInt64(bytes[index] - 48)
                index += 1
            }
            return value
        }
    }
}

extension ByteBuffer {
    /// Where `pattern` first starts among the readable bytes, counted from the reader index.
    ///
    /// `memchr` and `memcmp`, not `readableBytesView.firstRange(of:)`: the generic search took
    /// more than half of the harness's CPU when 10,000 SSE subscribers each scanned every
    /// message, CPU the server under test then did not have.
    func offset(of pattern: [UInt8]) -> Int? {
        withUnsafeReadableBytes { bytes in
            pattern.withUnsafeBytes { needle in
                guard let base = bytes.baseAddress, let needleBase = needle.baseAddress, let first = pattern.first else { return nil }
                var start = 0
                while start + needle.count <= bytes.count {
                    guard let found = memchr(base + start, Int32(first), bytes.count - needle.count - start + 1) else { return nil }
                    let offset = base.distance(to: UnsafeRawPointer(found))
                    if memcmp(found, needleBase, needle.count) == 0 { return offset }
                    start = offset + 1
                }
                return nil
            }
        }
    }
}

/// Connections to the servers under test, all alike: loopback, `TCP_NODELAY`, the shared
/// event loops.
enum Loopback {
    static func connect(port: Int, handlers: @escaping @Sendable (any Channel) throws -> Void) async throws -> any Channel {
        try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in channel.eventLoop.makeCompletedFuture { try handlers(channel) } }
            .connect(host: "127.0.0.1", port: port).get()
    }

    /// Whether something accepts connections on `port`.
    static func accepts(port: Int) async -> Bool {
        guard let channel = try? await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port).get()
        else { return false }
        try? await channel.close()
        return true
    }
}
