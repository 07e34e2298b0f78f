import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix

extension ClientError {
    /// A server that could not be reached, said in a few words a person can act on —
    /// "connection refused", "cannot resolve islet.internal" — rather than the layered
    /// description SwiftNIO gives ("connection reset (error set): Connection refused (errno: 111)").
    static func unreachable(server: String, cause: any Error) -> ClientError {
        .unreachable(server: server, detail: reason(cause))
    }

    private static func reason(_ error: any Error) -> String {
        if let error = error as? IOError {
            return reason(errno: error.errnoCode)
        }
        if let error = error as? NIOConnectionError {
            if let attempt = error.connectionErrors.first { return reason(attempt.error) }
            if error.dnsAError != nil || error.dnsAAAAError != nil { return "cannot resolve \(error.host)" }
        }
        if let error = error as? HTTPClientError {
            switch error {
            case .connectTimeout: return "no connection within the connect timeout"
            case .readTimeout, .deadlineExceeded: return "no answer in time"
            case .remoteConnectionClosed: return "the server closed the connection"
            default: break
            }
        }
        if let error = error as? ChannelError, case .connectTimeout = error {
            return "no connection within the connect timeout"
        }
        return "\(error)"
    }

    private static func reason(errno code: CInt) -> String {
        switch code {
        case ECONNREFUSED: "connection refused"
        case ETIMEDOUT: "timed out"
        case EHOSTUNREACH: "no route to the host"
        case ENETUNREACH: "the network is unreachable"
        case ECONNRESET: "the connection was reset"
        default: String(cString: strerror(code)).lowercased()
        }
    }
}
