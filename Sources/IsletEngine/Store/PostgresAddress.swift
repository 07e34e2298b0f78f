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
    public var host: String
    public var port: Int
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
    public static let parameters = ["sslmode", "sslrootcert", "application_name", "connect_timeout", "pool_size", "host"]
    /// `connect_timeout`'s whole seconds. libpq's 0, "wait for ever", is not taken: every
    /// connection Islet opens has a deadline.
    public static let connectTimeouts = 1...300
    /// `pool_size`'s range: at least two, because the store keeps one connection listening for
    /// other nodes' events and needs another for everything else.
    public static let poolSizes = 2...1_000
    /// `application_name` when the address does not say.
    public static let defaultApplicationName = "islet"

    private static let form = "postgres://user[:password]@host[:port]/database[?sslmode=require&…]"

    /// Reads an address.
    ///
    /// - Throws: `invalidRequest` naming what is missing or wrong. The message never repeats
    ///   the password.
    public init(_ text: String) throws(IsletError) {
        guard let url = URLComponents(string: text) else {
            throw IsletError(
                .invalidRequest,
                "The PostgreSQL address cannot be read as a URI (\(Self.form)): percent-encode @, :, /, ? and # in the user name and password, as in p%40ss for p@ss."
            )
        }
        guard let scheme = url.scheme, ["postgres", "postgresql"].contains(scheme) else {
            throw IsletError(.invalidRequest, "A PostgreSQL store is \(Self.form), not an address starting \"\(url.scheme.map { "\($0.prefix(20)):" } ?? "")\".")
        }
        let parameters = try Self.parameters(of: url)
        let host = try Self.host(of: url, parameter: parameters["host"])
        guard let username = url.user, !username.isEmpty else {
            throw IsletError(.invalidRequest, "The PostgreSQL address names no user: postgres://user@\(host)/database.")
        }
        // Split before decoding: a database name may hold a percent-encoded "/".
        let path = String(url.percentEncodedPath.drop { $0 == "/" })
        guard !path.isEmpty, !path.contains("/"), let database = path.removingPercentEncoding else {
            throw IsletError(.invalidRequest, "The PostgreSQL address names no database: postgres://\(username)@\(host)/database.")
        }
        let port = url.port ?? 5432
        guard (1...65_535).contains(port) else {
            throw IsletError(.invalidRequest, "The PostgreSQL port must be 1–65535, not \(port).")
        }
        self.host = host
        self.port = port
        self.username = username
        self.password = url.password
        self.database = database
        rootCertificates = try parameters["sslrootcert"].map(RootCertificates.init)
        sslMode = try Self.sslMode(parameters["sslmode"], rootCertificates: rootCertificates)
        applicationName = try parameters["application_name"].map(Self.applicationName) ?? Self.defaultApplicationName
        connectTimeout = try parameters["connect_timeout"].map { text throws(IsletError) in
            .seconds(try Self.number("connect_timeout", text, in: Self.connectTimeouts, meaning: "whole seconds"))
        }
        poolSize = try parameters["pool_size"].map { text throws(IsletError) in
            try Self.number("pool_size", text, in: Self.poolSizes, meaning: "the most connections a node opens; one stays listening for other nodes' events")
        }
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
        let host = host.contains(":") ? "[\(host)]" : host
        return "postgres://\(Self.encoded(username))@\(host):\(port)/\(Self.encoded(database))?" + query.joined(separator: "&")
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

    /// The host: the URI's, or the `host` parameter's when the URI leaves it out
    /// (`postgres://user@/database?host=…`, as libpq allows). One name or address, over TCP.
    private static func host(of url: URLComponents, parameter: String?) throws(IsletError) -> String {
        var host = url.host ?? ""
        // An IPv6 address is bracketed in a URI, not in a connection.
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        switch (host.isEmpty, parameter) {
        case (false, .some):
            throw IsletError(.invalidRequest, "The PostgreSQL address gives the host twice (\(host), and host=); give it once.")
        case (true, .some(let named)):
            host = named
        case (true, nil):
            throw IsletError(.invalidRequest, "The PostgreSQL address names no host: postgres://user@host:port/database.")
        case (false, nil):
            break
        }
        guard !host.isEmpty, !host.hasPrefix("/") else {
            throw IsletError(.invalidRequest, "The PostgreSQL host must be a name or an address: Islet connects over TCP, not a Unix socket (\(host.prefix(100))).")
        }
        guard !host.contains(",") else {
            throw IsletError(.invalidRequest, "The PostgreSQL address names several hosts (\(host.prefix(100))); Islet connects to one.")
        }
        return host
    }

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
