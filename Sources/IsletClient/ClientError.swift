import IsletCore

/// Why a call to an Islet server failed.
public enum ClientError: Error, CustomStringConvertible, Sendable {
    /// The server refused the request with a reason.
    case refused(status: Int, IsletError)
    /// The server answered something that is not Islet's JSON.
    case unexpected(status: Int, body: String)
    /// The server could not be reached; `detail` says why in a few words ("connection refused").
    case unreachable(server: String, detail: String)
    /// The server was reached, but the exchange ended before its answer did; `detail` says how
    /// ("the server closed the connection", "no answer in time").
    case interrupted(server: String, detail: String)
    /// The server was reached, but its TLS certificate is not one this client trusts (or the
    /// handshake failed otherwise); `detail` says which.
    case untrusted(server: String, detail: String)

    public var description: String {
        switch self {
        case .refused(let status, let error): "\(error.reason.rawValue) (HTTP \(status)): \(error.message)"
        case .unexpected(let status, let body): "unexpected response (HTTP \(status)): \(body.prefix(200))"
        case .unreachable(let server, let detail): "cannot reach the server at \(server) (\(detail))"
        case .interrupted(let server, let detail): "the server at \(server) gave no answer: \(detail)"
        case .untrusted(let server, let detail): "the server at \(server) is not trusted: \(detail)"
        }
    }
}
