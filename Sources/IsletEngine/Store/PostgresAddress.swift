import Foundation
import IsletCore

/// Where a PostgreSQL store lives and how to reach it, in libpq's URI form:
/// `postgres://user[:password]@host[:port]/database[?parameter=value&…]` (`postgresql://` too) —
/// the address managed PostgreSQL (RDS, Cloud SQL, Azure, Supabase, Neon) hands out, such as
/// `postgres://u:p@host/db?sslmode=require`.
///
/// Read once, where the setting enters (the configuration reader, `islet migrate`): a malformed
/// address, a value out of range or a parameter Islet does not take is refused with what is
/// wrong, never tried and left to fail later as a connection error — a misspelt `sslmode` must
/// not quietly connect without TLS. It lives beside `StoreOptions` rather than in IsletPostgres
/// so the server's configuration reader can check it without linking PostgreSQL's driver;
/// IsletPostgres turns it into connections (`PostgresAddress+Connections.swift`).
public struct PostgresAddress: Sendable, Equatable {
    /// A host and its port.
    public struct Endpoint: Sendable, Equatable, CustomStringConvertible {
        public var host: String
        public var port: Int

        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }

        /// `host:port`, an IPv6 address bracketed.
        public var description: String { "\(host.contains(":") ? "[\(host)]" : host):\(port)" }
    }

    /// The hosts, in the order they are tried (libpq's multi-host address: `a:5432,b:5432`).
    public var endpoints: [Endpoint]
    /// `target_session_attrs`: which of the hosts a node keeps.
    public var targetSessionAttributes: TargetSessionAttributes
    /// The first host: the one a single-host address names.
    public var host: String { endpoints[0].host }
    public var port: Int { endpoints[0].port }
    /// Percent-decoded, as libpq reads a URI: `p%40ss` is the password `p@ss`.
    public var username: String
    public var password: String?
    public var database: String
    /// `sslmode`: whether connections use TLS, and what of the server's certificate is checked
    /// (`tls` says what the two TLS parameters amount to).
    public var sslMode: SSLMode
    /// `sslrootcert`: the authorities the server's certificate must be signed by.
    public var rootCertificates: RootCertificates?
    /// `application_name`: how the node's sessions show in `pg_stat_activity` and the server's log.
    public var applicationName: String
    /// `connect_timeout`: how long opening a connection may take, login included, as libpq
    /// counts it; nil leaves each user of the address its own (the store's is 5 seconds).
    public var connectTimeout: Duration?
    /// `pool_size`: the most connections a node's store keeps open to the database; nil for the
    /// store's own number. libpq has no such parameter (a libpq client holds one connection): it
    /// travels in the address, as pgx's `pool_max_conns` and Prisma's `connection_limit` do,
    /// because it belongs with the database — a managed plan's connection limit divided among
    /// the nodes — and so shows beside the address in `/healthz`. psql refuses it; leave it out
    /// of an address given to libpq's tools.
    public var poolSize: Int?

    /// The parameters an address takes, in the order `redacted` writes them.
    public static let parameters = [
        "sslmode", "sslrootcert", "application_name", "connect_timeout", "pool_size", "target_session_attrs", "host", "port",
    ]
    /// What the keyword form (`host=a,b port=5432 dbname=islet user=islet`) takes beside them.
    static let keywords = ["dbname", "user", "password"]
    /// `connect_timeout`'s whole seconds. libpq's 0, "wait for ever", is not taken: every
    /// connection Islet opens has a deadline.
    public static let connectTimeouts = 1...300
    /// `pool_size`'s range: at least two, because the store keeps one connection listening for
    /// other nodes' events and needs another for everything else.
    public static let poolSizes = 2...1_000
    /// `application_name` when the address does not say.
    public static let defaultApplicationName = "islet"

    private static let form = "postgres://user[:password]@host[:port]/database[?sslmode=require&…]"

    /// Reads an address: libpq's URI (`postgres://user@host[:port][,host[:port]…]/database?…`)
    /// or its keyword form (`host=a,b port=5432,5433 dbname=islet user=islet …`).
    ///
    /// - Throws: `invalidRequest` naming what is missing or wrong. The message never repeats
    ///   the password.
    public init(_ text: String) throws(IsletError) {
        let parts = try text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") || !text.contains("=")
            ? Self.uriParts(text) : Self.keywordParts(text)
        try self.init(parts)
    }

    /// What either form gives: the hosts as written, the login, and the parameters by name.
    private struct Parts {
        var hosts: [String] = []
        var ports: [String] = []
        var username: String?
        var password: String?
        var database: String?
        var parameters: [String: String] = [:]
    }

    private init(_ parts: Parts) throws(IsletError) {
        var parts = parts
        for (name, list) in [("host", \Parts.hosts), ("port", \Parts.ports)] {
            guard let given = parts.parameters.removeValue(forKey: name) else { continue }
            guard parts[keyPath: list].isEmpty else {
                throw IsletError(.invalidRequest, "The PostgreSQL address gives the \(name) twice (in the URI, and \(name)=); give it once.")
            }
            parts[keyPath: list] = given.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        }
        endpoints = try Self.endpoints(hosts: parts.hosts, ports: parts.ports)
        let host = endpoints[0].host
        guard let username = parts.username, !username.isEmpty else {
            throw IsletError(.invalidRequest, "The PostgreSQL address names no user: postgres://user@\(host)/database.")
        }
        guard let database = parts.database, !database.isEmpty else {
            throw IsletError(.invalidRequest, "The PostgreSQL address names no database: postgres://\(username)@\(host)/database.")
        }
        self.username = username
        self.password = parts.password
        self.database = database
        let parameters = parts.parameters
        rootCertificates = try parameters["sslrootcert"].map(RootCertificates.init)
        sslMode = try Self.sslMode(parameters["sslmode"], rootCertificates: rootCertificates)
        applicationName = try parameters["application_name"].map(Self.applicationName) ?? Self.defaultApplicationName
        connectTimeout = try parameters["connect_timeout"].map { text throws(IsletError) in
            .seconds(try Self.number("connect_timeout", text, in: Self.connectTimeouts, meaning: "whole seconds"))
        }
        poolSize = try parameters["pool_size"].map { text throws(IsletError) in
            try Self.number("pool_size", text, in: Self.poolSizes, meaning: "the most connections a node opens; one stays listening for other nodes' events")
        }
        targetSessionAttributes = try parameters["target_session_attrs"].map(TargetSessionAttributes.init) ?? .any
    }

    /// The same address with one of its hosts alone, the choice made (`any`): what the store
    /// connects to once it chose.
    public func narrowed(to endpoint: Endpoint) -> PostgresAddress {
        var one = self
        one.endpoints = [endpoint]
        one.targetSessionAttributes = .any
        return one
    }

    /// What connections to this address do about TLS: `sslmode` and `sslrootcert` taken
    /// together, as libpq takes them.
    public var tls: TLS {
        // libpq checks the chain whenever it was given authorities, whatever the mode.
        let given: Verification = rootCertificates == nil ? .none : .chain
        switch sslMode {
        case .disable: return .off
        case .allow, .prefer: return .preferred(given)
        case .require: return .required(given)
        case .verifyCA: return .required(.chain)
        case .verifyFull: return .required(.chainAndHost)
        }
    }

    /// The address without its password: what logs and `/healthz` may show. It keeps the
    /// parameters, `sslmode` always (the default too), so a reader sees how the node connects.
    public var redacted: String {
        var query = ["sslmode=\(sslMode.rawValue)"]
        switch rootCertificates {
        case .file(let path): query.append("sslrootcert=\(Self.encoded(path, keeping: "/"))")
        case .system: query.append("sslrootcert=system")
        case nil: break
        }
        if applicationName != Self.defaultApplicationName { query.append("application_name=\(Self.encoded(applicationName))") }
        if let connectTimeout { query.append("connect_timeout=\(connectTimeout.components.seconds)") }
        if let poolSize { query.append("pool_size=\(poolSize)") }
        if targetSessionAttributes != .any { query.append("target_session_attrs=\(targetSessionAttributes.rawValue)") }
        let hosts = endpoints.map(\.description).joined(separator: ",")
        return "postgres://\(Self.encoded(username))@\(hosts)/\(Self.encoded(database))?" + query.joined(separator: "&")
    }

    // MARK: Reading the parts

    /// The query's parameters by name, each once, each one Islet takes.
    private static func parameters(of url: URLComponents) throws(IsletError) -> [String: String] {
        var parameters: [String: String] = [:]
        // A bare "?" or "&&" is no parameter.
        for item in url.queryItems ?? [] where !(item.name.isEmpty && item.value == nil) {
            guard Self.parameters.contains(item.name) else {
                let unsupported = ["sslcert", "sslkey", "sslpassword", "sslcrl", "sslcrldir"].contains(item.name)
                    ? " Client certificates and revocation lists are not supported yet." : ""
                throw IsletError(
                    .invalidRequest,
                    "The PostgreSQL address has a parameter Islet does not take: \"\(item.name.prefix(40))\".\(unsupported) It takes \(Self.parameters.joined(separator: ", ")) (docs/cluster.md)."
                )
            }
            guard parameters[item.name] == nil else {
                throw IsletError(.invalidRequest, "The PostgreSQL address gives \(item.name) twice; give it once.")
            }
            parameters[item.name] = item.value ?? ""
        }
        return parameters
    }

    /// A URI's parts. Its hosts are read here, not by `URLComponents`, which takes one: the
    /// list between `@` and the path is set aside and the rest read as a URI.
    private static func uriParts(_ text: String) throws(IsletError) -> Parts {
        var hostList = ""
        var uri = text
        if let start = text.range(of: "://") {
            let afterScheme = text[start.upperBound...]
            let authorityEnd = afterScheme.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? afterScheme.endIndex
            let authority = afterScheme[..<authorityEnd]
            let hostsStart = authority.lastIndex(of: "@").map { authority.index(after: $0) } ?? authority.startIndex
            hostList = String(authority[hostsStart...])
            uri = String(text[..<hostsStart]) + (hostList.isEmpty ? "" : "islet-hosts") + String(text[authorityEnd...])
        }
        guard let url = URLComponents(string: uri) else {
            throw IsletError(
                .invalidRequest,
                "The PostgreSQL address cannot be read as a URI (\(Self.form)): percent-encode @, :, /, ? and # in the user name and password, as in p%40ss for p@ss."
            )
        }
        guard let scheme = url.scheme, ["postgres", "postgresql"].contains(scheme) else {
            throw IsletError(.invalidRequest, "A PostgreSQL store is \(Self.form), not an address starting \"\(url.scheme.map { "\($0.prefix(20)):" } ?? "")\".")
        }
        var parts = Parts()
        parts.parameters = try parameters(of: url)
        if !hostList.isEmpty {
            for item in hostList.split(separator: ",", omittingEmptySubsequences: false) {
                let (host, port) = try Self.hostAndPort(String(item))
                parts.hosts.append(host)
                parts.ports.append(port ?? "")
            }
            if parts.ports.allSatisfy(\.isEmpty) { parts.ports = [] }
        }
        parts.username = url.user
        parts.password = url.password
        // Split before decoding: a database name may hold a percent-encoded "/".
        let path = String(url.percentEncodedPath.drop { $0 == "/" })
        if !path.contains("/") { parts.database = path.removingPercentEncoding }
        return parts
    }

    /// One item of a URI's host list: `name`, `name:port`, `[v6]` or `[v6]:port`.
    private static func hostAndPort(_ item: String) throws(IsletError) -> (String, String?) {
        if item.hasPrefix("[") {
            guard let close = item.firstIndex(of: "]") else {
                throw IsletError(.invalidRequest, "The PostgreSQL address's host \(item.prefix(100)) opens [ without closing it.")
            }
            let host = String(item[item.index(after: item.startIndex)..<close])
            let rest = item[item.index(after: close)...]
            guard rest.isEmpty || rest.hasPrefix(":") else {
                throw IsletError(.invalidRequest, "The PostgreSQL address's host \(item.prefix(100)) has something after ].")
            }
            return (host, rest.isEmpty ? nil : String(rest.dropFirst()))
        }
        guard let colon = item.lastIndex(of: ":") else { return (item, nil) }
        return (String(item[..<colon]), String(item[item.index(after: colon)...]))
    }

    /// libpq's keyword form: `key=value` pairs apart by spaces, a value in single quotes when it
    /// holds spaces (`\'` and `\\` inside them), as `psql "host=a,b dbname=islet"` reads it.
    private static func keywordParts(_ text: String) throws(IsletError) -> Parts {
        var parts = Parts()
        var rest = Substring(text)
        func skipSpaces() { rest = rest.drop { $0 == " " || $0 == "\t" || $0 == "\n" } }
        skipSpaces()
        while !rest.isEmpty {
            guard let equals = rest.firstIndex(of: "=") else {
                throw IsletError(.invalidRequest, "The PostgreSQL address's keyword form is key=value pairs (host=… dbname=… user=…): \"\(rest.prefix(40))\" has no =.")
            }
            let key = rest[..<equals].trimmingCharacters(in: .whitespaces)
            rest = rest[rest.index(after: equals)...]
            skipSpaces()
            var value = ""
            if rest.first == "'" {
                rest = rest.dropFirst()
                var closed = false
                while let character = rest.first {
                    rest = rest.dropFirst()
                    if character == "\\", let next = rest.first {
                        value.append(next)
                        rest = rest.dropFirst()
                    } else if character == "'" {
                        closed = true
                        break
                    } else {
                        value.append(character)
                    }
                }
                guard closed else { throw IsletError(.invalidRequest, "The PostgreSQL address's value of \(key.prefix(40)) opens a quote without closing it.") }
            } else {
                let end = rest.firstIndex { $0 == " " || $0 == "\t" || $0 == "\n" } ?? rest.endIndex
                value = String(rest[..<end])
                rest = rest[end...]
            }
            skipSpaces()
            let login: WritableKeyPath<Parts, String?>? =
                switch key {
                case "dbname": \.database
                case "user": \.username
                case "password": \.password
                default: nil
                }
            switch login {
            case let field?:
                guard parts[keyPath: field] == nil else {
                    throw IsletError(.invalidRequest, "The PostgreSQL address gives \(key) twice; give it once.")
                }
                parts[keyPath: field] = value
            case nil:
                guard Self.parameters.contains(key) else {
                    throw IsletError(
                        .invalidRequest,
                        "The PostgreSQL address has a keyword Islet does not take: \"\(key.prefix(40))\". It takes \((Self.keywords + Self.parameters).joined(separator: ", ")) (docs/cluster.md)."
                    )
                }
                guard parts.parameters[key] == nil else {
                    throw IsletError(.invalidRequest, "The PostgreSQL address gives \(key) twice; give it once.")
                }
                parts.parameters[key] = value
            }
        }
        return parts
    }

    /// The hosts with their ports: as many ports as hosts, or one for all, or none (5432), as
    /// libpq pairs them. Each host a name or an address, over TCP.
    private static func endpoints(hosts: [String], ports: [String]) throws(IsletError) -> [Endpoint] {
        guard !hosts.isEmpty else {
            throw IsletError(.invalidRequest, "The PostgreSQL address names no host: postgres://user@host:port/database.")
        }
        guard hosts.count <= maximumHosts else {
            throw IsletError(.invalidRequest, "The PostgreSQL address names \(hosts.count) hosts; Islet tries at most \(maximumHosts).")
        }
        guard ports.isEmpty || ports.count == 1 || ports.count == hosts.count else {
            throw IsletError(.invalidRequest, "The PostgreSQL address gives \(hosts.count) hosts and \(ports.count) ports: give one port for each host, or one for all.")
        }
        return try hosts.enumerated().map { index, host throws(IsletError) in
            guard !host.isEmpty, !host.hasPrefix("/") else {
                throw IsletError(
                    .invalidRequest,
                    host.isEmpty
                        ? "The PostgreSQL address's host list has an empty entry."
                        : "The PostgreSQL host must be a name or an address: Islet connects over TCP, not a Unix socket (\(host.prefix(100)))."
                )
            }
            let text = ports.isEmpty ? "" : ports.count == 1 ? ports[0] : ports[index]
            guard text.isEmpty || (text.allSatisfy(\.isASCII) && text.allSatisfy(\.isNumber)), let port = text.isEmpty ? 5432 : Int(text),
                (1...65_535).contains(port)
            else {
                throw IsletError(.invalidRequest, "The PostgreSQL port must be 1–65535, not \(text.prefix(20)).")
            }
            return Endpoint(host: host, port: port)
        }
    }

    /// The most hosts an address may list.
    public static let maximumHosts = 16

    /// `sslmode`, checked against `sslrootcert`: libpq's default `prefer` (`verify-full` with
    /// `sslrootcert=system`, as in libpq 16), and no combination that would check less than
    /// it seems to.
    private static func sslMode(_ text: String?, rootCertificates: RootCertificates?) throws(IsletError) -> SSLMode {
        guard let text else { return rootCertificates == .system ? .verifyFull : .prefer }
        guard let mode = SSLMode(rawValue: text) else {
            throw IsletError(
                .invalidRequest,
                "The PostgreSQL address's sslmode is one of \(SSLMode.allCases.map(\.rawValue).joined(separator: ", ")), not \"\(text.prefix(40))\"."
            )
        }
        switch (mode, rootCertificates) {
        case (.verifyCA, nil), (.verifyFull, nil):
            throw IsletError(
                .invalidRequest,
                "sslmode=\(mode.rawValue) checks the server's certificate against sslrootcert: give the path of a PEM file of the authorities that sign it (your provider's CA bundle), or sslrootcert=system for this machine's trusted authorities."
            )
        case (.disable, .some):
            throw IsletError(.invalidRequest, "sslmode=disable turns TLS off, so sslrootcert would not be used: remove one of them.")
        case (let mode, .system) where mode != .verifyFull:
            throw IsletError(.invalidRequest, "sslrootcert=system needs sslmode=verify-full (as in libpq): a certificate any public authority signed proves nothing unless it names the host.")
        default:
            return mode
        }
    }

    /// `application_name`: up to 63 printable ASCII characters, what PostgreSQL keeps of one.
    private static func applicationName(_ text: String) throws(IsletError) -> String {
        guard (1...63).contains(text.utf8.count), text.unicodeScalars.allSatisfy({ (0x20...0x7E).contains($0.value) }) else {
            throw IsletError(.invalidRequest, "The PostgreSQL address's application_name is 1 to 63 printable ASCII characters, not \"\(text.prefix(80))\".")
        }
        return text
    }

    /// A whole number parameter within `range`.
    private static func number(_ name: String, _ text: String, in range: ClosedRange<Int>, meaning: String) throws(IsletError) -> Int {
        guard let number = Int(text), range.contains(number) else {
            throw IsletError(
                .invalidRequest,
                "The PostgreSQL address's \(name) is \(range.lowerBound) to \(range.upperBound) (\(meaning)), not \"\(text.prefix(40))\"."
            )
        }
        return number
    }

    /// `text` percent-encoded for a URI: unreserved characters, and `extra`, kept.
    private static func encoded(_ text: String, keeping extra: String = "") -> String {
        let kept = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~" + extra)
        return text.addingPercentEncoding(withAllowedCharacters: kept) ?? text
    }
}

extension PostgresAddress {
    /// libpq's `target_session_attrs`: which host of a list a node keeps (docs/cluster.md §7).
    /// `read-only` and `standby` are not taken: a node writes.
    public enum TargetSessionAttributes: String, Sendable, CaseIterable {
        /// The first host that takes a connection (libpq's default).
        case any
        /// A host whose sessions may write (`transaction_read_only` is `off`): what a node wants.
        case readWrite = "read-write"
        /// A host that is not a standby (`pg_is_in_recovery()` is false).
        case primary
        /// A standby first, else any host.
        case preferStandby = "prefer-standby"

        init(_ text: String) throws(IsletError) {
            if ["read-only", "standby"].contains(text) {
                throw IsletError(.invalidRequest, "target_session_attrs=\(text) keeps a host that cannot write, and a node writes: use read-write (docs/cluster.md).")
            }
            guard let value = Self(rawValue: text) else {
                throw IsletError(
                    .invalidRequest,
                    "The PostgreSQL address's target_session_attrs is one of \(Self.allCases.map(\.rawValue).joined(separator: ", ")), not \"\(text.prefix(40))\"."
                )
            }
            self = value
        }
    }

    /// libpq's `sslmode` values. postgres-nio can try TLS and fall back to a plain connection,
    /// or insist on TLS; it cannot start plain and retry with TLS, which is what `allow` means
    /// to libpq.
    public enum SSLMode: String, Sendable, CaseIterable {
        /// No TLS: for a database on the same machine or a private network one trusts.
        case disable
        /// As `prefer` here. libpq connects without TLS first and tries TLS only when refused;
        /// TLS first reaches every server that `allow` does, except one that refuses TLS logins
        /// (`hostnossl`) while offering TLS.
        case allow
        /// The default, as in libpq: TLS when the server offers it, a plain connection when it
        /// answers that it has none; the certificate is not checked unless `sslrootcert` is
        /// given. Unlike libpq, a login refused over TLS is not tried again without it.
        case prefer
        /// TLS or no connection; the certificate is not checked — safe from listeners, not from
        /// a server in the middle — unless `sslrootcert` is given, when it is checked as for
        /// `verify-ca` (as libpq does).
        case require
        /// TLS, and the certificate is signed by an authority in `sslrootcert`, for any name.
        case verifyCA = "verify-ca"
        /// TLS, the certificate is signed by an authority in `sslrootcert`, and it names the
        /// host connected to: what a database reached over the internet needs.
        case verifyFull = "verify-full"
    }

    /// Where the authorities that sign the server's certificate come from (`sslrootcert`).
    public enum RootCertificates: Sendable, Equatable {
        /// A PEM file of authority certificates: a provider's CA bundle. Read as the store
        /// opens, so a missing or unreadable file stops the node at start.
        case file(String)
        /// This machine's trusted authorities: `sslrootcert=system`, libpq 16's spelling.
        case system

        init(_ text: String) throws(IsletError) {
            guard !text.isEmpty else {
                throw IsletError(.invalidRequest, "The PostgreSQL address's sslrootcert is empty: give a PEM file's path, or system.")
            }
            self = text == "system" ? .system : .file(text)
        }
    }

    /// What a connection does about TLS.
    public enum TLS: Sendable, Equatable {
        /// No TLS.
        case off
        /// TLS when the server offers it, a plain connection when it has none.
        case preferred(Verification)
        /// TLS or no connection.
        case required(Verification)
    }

    /// What of the server's certificate is checked.
    public enum Verification: Sendable, Equatable {
        /// Nothing: the connection is encrypted, but to whoever answered.
        case none
        /// It is signed by one of the root certificates, whatever name it holds.
        case chain
        /// It is signed by one of the root certificates and names the host.
        case chainAndHost
    }
}
