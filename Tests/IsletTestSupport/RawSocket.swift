import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A bare TCP client, for requests no HTTP library would send and for readers that never read.
public final class RawSocket: Sendable {
    private let descriptor: Int32

    /// Connects to 127.0.0.1:`port`, with a small receive buffer when asked.
    public init(port: Int, receiveBuffer: Int32? = nil) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if var size = receiveBuffer {
            setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            close(descriptor)
            throw POSIXError(.ECONNREFUSED)
        }
    }

    /// Sends bytes as they are; false once the peer has closed (never a SIGPIPE).
    @discardableResult
    public func send(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }

    /// Reads until the peer closes or `seconds` pass.
    public func readAll(seconds: Int = 5) -> String {
        read(seconds: seconds).text
    }

    /// Reads until the peer closes or `seconds` pass, as bytes.
    public func readAllBytes(seconds: Int = 5) -> [UInt8] {
        readBytes(seconds: seconds, untilSuffix: nil).bytes
    }

    /// Reads until the peer closes (`closed`), what was read ends with `suffix`, or `seconds`
    /// pass without a byte.
    public func read(seconds: Int, untilSuffix suffix: String? = nil) -> (text: String, closed: Bool) {
        let (bytes, closed) = readBytes(seconds: seconds, untilSuffix: suffix)
        return (String(decoding: bytes, as: UTF8.self), closed)
    }

    /// Reads until `count` bytes have arrived, the peer closes (`closed`), or `seconds` pass
    /// without a byte: a reader that takes its answers at a pace of its own.
    public func read(atMost count: Int, seconds: Int) -> (text: String, closed: Bool) {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var data = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: count)
        while data.count < count {
            let received = recv(descriptor, &buffer, count - data.count, 0)
            if received == 0 || (received < 0 && errno == ECONNRESET) {
                return (String(decoding: data, as: UTF8.self), true)
            }
            if received < 0 { break }
            data += buffer[0..<received]
        }
        return (String(decoding: data, as: UTF8.self), false)
    }

    /// Reads until what was read so far satisfies `done`, the peer closes (`closed`), or
    /// `seconds` pass without a byte: a stream that stays open is read up to what is awaited.
    public func read(seconds: Int, until done: ([UInt8]) -> Bool) -> (bytes: [UInt8], closed: Bool) {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var data = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count == 0 || (count < 0 && errno == ECONNRESET) {
                return (data, true)
            }
            if count < 0 { return (data, false) }
            data += buffer[0..<count]
            if done(data) { return (data, false) }
        }
    }

    /// Whether the peer has closed, without waiting: what it sent meanwhile is read and dropped.
    public func peerHasClosed() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if count == 0 || (count < 0 && errno == ECONNRESET) { return true }
            if count < 0 { return false }
        }
    }

    private func readBytes(seconds: Int, untilSuffix suffix: String?) -> (bytes: [UInt8], closed: Bool) {
        read(seconds: seconds) { data in
            guard let suffix else { return false }
            return data.count >= suffix.utf8.count && data.suffix(suffix.utf8.count).elementsEqual(suffix.utf8)
        }
    }

    deinit {
        close(descriptor)
    }
}

public enum RawHTTP {
    /// Sends raw bytes and returns everything the server answers before closing.
    /// The server closes after its answer; a loaded machine (the whole suite at once) was seen
    /// to take over 5 s to begin one, so the wait for a byte is 20 s.
    public static func exchange(port: Int, bytes: [UInt8]) async throws -> String {
        let socket = try RawSocket(port: port)
        socket.send(bytes)
        return await offThePool { socket.readAll(seconds: 20) }
    }
}
