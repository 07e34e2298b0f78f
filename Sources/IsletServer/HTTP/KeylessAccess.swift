import Foundation
import HTTPTypes

/// Whether a request that carries no key may act as a device's display, and if not, why.
///
/// A server that listens on loopback only lets displays in without a key: every caller is on
/// this machine. A browser on this machine, though, also runs pages from anywhere, and those
/// pages can reach loopback. So keyless access is granted only to what no other web page can
/// send:
///
/// - **`Host` names a loopback address** (`localhost`, `*.localhost`, `127.x.x.x`, `[::1]`).
///   A DNS-rebinding page (`evil.example` resolved to 127.0.0.1) is same-origin with itself,
///   so its browser sends `Host: evil.example`.
/// - **`Origin`, when a browser sends one, is this server's own origin.** Browsers send it on
///   WebSocket handshakes, which CORS does not protect, and on cross-origin writes; a page on
///   another port or site sends its own. Programs (curl, the CLI) send none.
/// - **A write carries `Content-Type: application/json`.** A cross-origin page can send that
///   only after a CORS preflight, which Islet never approves; `no-cors` requests and forms can
///   only send text/plain, form or multipart bodies.
/// - **Nothing says a proxy sent it.** A reverse proxy on this machine makes every client's
///   request arrive from loopback, with a loopback `Host` (nginx's plain `proxy_pass
///   http://127.0.0.1:8080` sends `Host: 127.0.0.1:8080`). Proxies say so: a forwarding header
///   (`Forwarded`, `X-Forwarded-For`, `X-Real-IP`, `Via`…), or HTTP/1.0, which nginx speaks to
///   its upstreams by default and no browser speaks. Such a request needs a key. A proxy that
///   says nothing cannot be told from a browser here: `server.keylessLoopback: false` is for it.
///
/// With a key none of this applies: a page can only send a key it was given, and a header
/// carrying one (`Authorization`) also needs a preflight.
enum KeylessAccess: Equatable, Sendable {
    /// The request may act as any device's display.
    case granted
    /// The server listens beyond loopback, or `server.keylessLoopback` is off: displays need
    /// their device's key.
    case needsKey

    /// Why a `needsKey` server lets no one in without a key, as answers say it.
    static let whyKeysAreNeeded = "it is reachable from other machines, or server.keylessLoopback is off"
    /// The server listens on loopback only, but this request could come from another web page.
    case refused(String)

    /// Decides for one request.
    ///
    /// - Parameters:
    ///   - request: The request's head; HTTP/1.1's `Host` is its `authority`.
    ///   - allowed: Whether keyless access is on at all: the server listens on loopback only and
    ///     `server.keylessLoopback` is on.
    static func evaluate(_ request: HTTPRequest, allowed: Bool) -> KeylessAccess {
        guard allowed else { return .needsKey }
        let headers = request.headerFields
        let method = request.method
        if let forwarded = forwardingFields.first(where: { headers[$0] != nil }) {
            return .refused(
                "A request that came through a proxy (it carries \(forwarded.canonicalName)) needs a key, even from loopback: the proxy may be forwarding another machine's request."
            )
        }
        if headers[requestVersionField] == "HTTP/1.0" {
            return .refused(
                "Without a key, the display answers HTTP/1.1 requests only: HTTP/1.0 is what a proxy (nginx's default) sends for another machine, never a browser."
            )
        }
        guard let host = request.authority.flatMap(Authority.init), host.isLoopback else {
            return .refused(
                "Without a key, the display answers only requests addressed to a loopback name (http://127.0.0.1 or http://localhost), not Host \(request.authority.map { "\"\($0.prefix(100))\"" } ?? "(none)")."
            )
        }
        if let origin = headers[.origin] {
            guard let authority = Self.authority(ofOrigin: origin), authority == host else {
                return .refused(
                    "Without a key, the display answers only pages of its own origin (http://\(host)), not \(origin.prefix(100)); give the page a device key (islet devices key)."
                )
            }
        }
        if method != .get, method != .head {
            let type = headers[.contentType]?.split(separator: ";", omittingEmptySubsequences: false).first?
                .trimmingCharacters(in: .whitespaces).lowercased()
            guard type == "application/json" else {
                return .refused("Without a key, a display's changes must be sent as Content-Type: application/json.")
            }
        }
        return .granted
    }

    /// The headers by which proxies say that a request was forwarded: RFC 7239's, the de facto
    /// ones nginx, Apache, HAProxy, Caddy, Traefik and CDNs add, and RFC 9110's `Via`.
    static let forwardingFields: [HTTPField.Name] = [
        "Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Forwarded-Port", "X-Forwarded-Server",
        "X-Real-IP", "Via", "X-Client-IP", "Client-IP", "True-Client-IP", "CF-Connecting-IP", "Fastly-Client-IP",
        "X-Cluster-Client-IP", "X-ProxyUser-Ip",
    ].map { HTTPField.Name($0)! }

    /// Where the REST port's `RequestGuard` writes a request's HTTP version when it is older than
    /// 1.1 (HTTP types carry no version); one a client sends itself is removed first.
    static let requestVersionField = HTTPField.Name("Islet-Request-Version")!

    /// `http://host:port` → its authority; `nil` for `null`, other schemes and anything unparsable.
    private static func authority(ofOrigin origin: String) -> Authority? {
        for scheme in ["http://", "https://"] where origin.lowercased().hasPrefix(scheme) {
            return Authority(String(origin.dropFirst(scheme.count)))
        }
        return nil
    }

    /// A `Host` header or an origin's host and port, lower-cased.
    struct Authority: Equatable {
        var host: String
        var port: String?

        init?(_ text: String) {
            let text = text.lowercased()
            if text.hasPrefix("[") {
                guard let close = text.firstIndex(of: "]") else { return nil }
                host = String(text[...close])
                let rest = text[text.index(after: close)...]
                guard rest.isEmpty || rest.hasPrefix(":") else { return nil }
                port = rest.isEmpty ? nil : String(rest.dropFirst())
            } else {
                let parts = text.split(separator: ":", omittingEmptySubsequences: false)
                guard parts.count <= 2, let first = parts.first, !first.isEmpty else { return nil }
                host = String(first)
                port = parts.count == 2 ? String(parts[1]) : nil
            }
            if let port, port.isEmpty || !port.allSatisfy(\.isASCIIDigit) { return nil }
        }

        /// Whether the name is one only this machine answers to.
        var isLoopback: Bool {
            // Browsers resolve every `*.localhost` name to loopback themselves (RFC 6761).
            host.hasSuffix(".localhost") || Self.isLoopbackName(host)
        }

        /// Whether `name` — `localhost`, an IPv4 literal in 127.0.0.0/8, or `::1` (bracketed or
        /// not) — can only reach this machine. No other name is trusted: `127.example.net` may
        /// resolve anywhere.
        static func isLoopbackName(_ name: String) -> Bool {
            let name = name.lowercased()
            if name == "localhost" || name == "[::1]" || name == "::1" { return true }
            let octets = name.split(separator: ".", omittingEmptySubsequences: false)
            return octets.count == 4 && octets[0] == "127"
                && octets.allSatisfy { !$0.isEmpty && $0.count <= 3 && $0.allSatisfy(\.isASCIIDigit) && Int($0)! <= 255 }
        }
    }
}

extension KeylessAccess.Authority: CustomStringConvertible {
    var description: String { port.map { "\(host):\($0)" } ?? host }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
