/// Another APNs-compatible host to deliver to instead of Apple's: `https://host[:port]` and
/// nothing else — the one form a delivery credential's `url` may take.
///
/// It is read where a credential enters (registration) and again before every request, by the
/// same rule, so that nothing stored can reach the HTTP client in a form it traps on (a port
/// above 65535 stops the whole process inside async-http-client) or quietly ignores (a user
/// name and password, a fragment, a path).
public struct PushServerAddress: Hashable, Sendable, CustomStringConvertible {
    /// The host as written, lower-cased: a DNS name, an IPv4 address, or an IPv6 address in
    /// brackets.
    public let host: String
    /// The port, 1 to 65535; `nil` when the address names none (443).
    public let port: Int?

    /// `https://host[:port]`, without a trailing slash: what requests' paths are appended to.
    public var description: String { "https://\(host)" + (port.map { ":\($0)" } ?? "") }

    /// Reads an address, or says what is wrong with it, in words that name the part.
    public init(_ text: String) throws(IsletError) {
        let example = "such as https://127.0.0.1:2197"
        guard text.utf8.count <= 300 else {
            throw IsletError(.invalidRequest, "url is at most 300 characters, \(example).")
        }
        guard text.lowercased().hasPrefix("https://") else {
            throw IsletError(.invalidRequest, "url must be an https address with a host and an optional port, \(example); \"\(text.prefix(80))\" is not.")
        }
        var rest = Substring(text.dropFirst("https://".count))
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        let refused: [(Character, String)] = [
            ("@", "a user name or password (user:password@); Apple is authenticated by the .p8 key"), ("#", "a fragment (#…)"),
            ("?", "a query (?…)"), ("/", "a path; requests' paths are Apple's own"),
        ]
        for (character, part) in refused where rest.contains(character) {
            throw IsletError(.invalidRequest, "url must not carry \(part): give only https://host:port, \(example).")
        }
        let hostPart: Substring
        let portPart: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else {
                throw IsletError(.invalidRequest, "url's IPv6 address must end with ], \(example) or https://[::1]:2197.")
            }
            hostPart = rest[...close]
            let after = rest[rest.index(after: close)...]
            guard after.isEmpty || after.hasPrefix(":") else {
                throw IsletError(.invalidRequest, "url's IPv6 address may be followed only by :port, \(example).")
            }
            portPart = after.isEmpty ? nil : after.dropFirst()
        } else {
            let parts = rest.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            hostPart = parts[0]
            portPart = parts.count == 2 ? parts[1] : nil
        }
        guard Self.isHost(hostPart) else {
            throw IsletError(.invalidRequest, "url's host must be a DNS name, an IPv4 address or an IPv6 address in brackets; \"\(hostPart.prefix(80))\" is not.")
        }
        host = hostPart.lowercased()
        if let portPart {
            guard !portPart.isEmpty, portPart.count <= 5, portPart.allSatisfy({ $0.isASCII && $0.isNumber }), let port = Int(portPart),
                (1...65535).contains(port)
            else {
                throw IsletError(.invalidRequest, "url's port must be a number from 1 to 65535; \"\(portPart.prefix(20))\" is not.")
            }
            self.port = port
        } else {
            port = nil
        }
    }

    /// Whether `text` is a host the HTTP client can connect to as it is: DNS labels of letters,
    /// digits and hyphens (1 to 63 characters each, 253 in all), or a bracketed IPv6 address
    /// of hexadecimal digits, colons and dots (no zone: `%` is not an address's).
    private static func isHost(_ text: Substring) -> Bool {
        if text.hasPrefix("[") {
            let inner = text.dropFirst().dropLast()
            return (2...45).contains(inner.count) && inner.contains(":")
                && inner.allSatisfy { $0.isASCII && ($0.isHexDigit || $0 == ":" || $0 == ".") }
        }
        guard !text.isEmpty, text.count <= 253 else { return false }
        return text.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { label in
            (1...63).contains(label.count) && label.first != "-" && label.last != "-"
                && label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
        }
    }
}
