import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A loopback port no one listens on now, for a server that cannot bind port 0 and say which it
/// got (PostgreSQL, nginx). It can be taken before the server binds it: callers retry.
public func freeLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw FreePortError("socket: \(errno)") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
            bind(fd, generic, length) == 0 && getsockname(fd, generic, &length) == 0
        }
    }
    guard bound else { throw FreePortError("bind: \(errno)") }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// Why no free port could be found.
public struct FreePortError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
