import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix
import NIOSSL

extension ClientError {
    /// A request that failed without an answer, said in a few words a person can act on —
    /// "connection refused", "cannot resolve islet.internal", "the server closed the connection",
    /// "its certificate is signed by no authority trusted here" — rather than the layered
    /// description SwiftNIO or BoringSSL gives ("connection reset (error set): Connection
    /// refused (errno: 111)", a dump of SSL error stacks and source paths).
    static func unreachable(server: String, cause: any Error) -> ClientError {
        if let error = cause as? NIOSSLError {
            return .untrusted(server: server, detail: tls(error))
        }
        if let error = cause as? NIOSSLExtraError {
            return .untrusted(server: server, detail: "its TLS certificate does not name it (\(error))")
        }
        if let error = cause as? HTTPClientError {
            switch error {
            case .readTimeout, .deadlineExceeded: return .interrupted(server: server, detail: "no answer in time")
            case .remoteConnectionClosed: return .interrupted(server: server, detail: "the server closed the connection before answering")
            default: break
            }
        }
        if let error = cause as? IOError, error.errnoCode == ECONNRESET {
            return .interrupted(server: server, detail: "the connection was reset")
        }
        if let error = cause as? ChannelError, [.eof, .ioOnClosedChannel, .alreadyClosed].contains(error) {
            return .interrupted(server: server, detail: "the server closed the connection before answering")
        }
        return .unreachable(server: server, detail: reason(cause))
    }

    /// A TLS handshake's failure: a certificate no trusted authority signed, or what else it was,
    /// without BoringSSL's stack.
    private static func tls(_ error: NIOSSLError) -> String {
        let text = "\(error)"
        if text.contains("CERTIFICATE_VERIFY_FAILED") {
            return "its TLS certificate is signed by no authority trusted here"
        }
        if case .handshakeFailed = error { return "the TLS handshake failed" }
        return "TLS failed (\(text.prefix(120)))"
    }

    private static func reason(_ error: any Error) -> String {
        if let error = error as? IOError {
            return reason(errno: error.errnoCode)
        }
        if let error = error as? NIOConnectionError {
            if let attempt = error.connectionErrors.first { return reason(attempt.error) }
            if error.dnsAError != nil || error.dnsAAAAError != nil { return "cannot resolve \(error.host)" }
        }
        if let error = error as? HTTPClientError, case .connectTimeout = error {
            return "no connection within the connect timeout"
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
