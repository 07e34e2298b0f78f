import Foundation
import IsletCore
import PostgresNIO

/// Where a PostgreSQL store lives, as `store: postgres://user[:password]@host[:port]/database`
/// says it (the form libpq and every PostgreSQL tool accept; `postgresql://` too).
///
/// Read once, where the setting enters: a malformed address is refused with what is wrong,
/// never tried and left to fail later as a connection error.
public struct PostgresAddress: Sendable, Equatable {
    public var host: String
    public var port: Int
    public var username: String
    public var password: String?
    public var database: String

    /// Reads an address.
    ///
    /// - Throws: `invalidRequest` naming what is missing or wrong.
    public init(_ text: String) throws(IsletError) {
        guard let url = URLComponents(string: text), let scheme = url.scheme, ["postgres", "postgresql"].contains(scheme) else {
            throw IsletError(.invalidRequest, "A PostgreSQL store is postgres://user@host:port/database, not \"\(text.prefix(200))\".")
        }
        guard let host = url.host, !host.isEmpty else {
            throw IsletError(.invalidRequest, "The PostgreSQL address names no host: postgres://user@host:port/database.")
        }
        guard let username = url.user, !username.isEmpty else {
            throw IsletError(.invalidRequest, "The PostgreSQL address names no user: postgres://user@\(host)/database.")
        }
        let database = String(url.path.drop { $0 == "/" })
        guard !database.isEmpty, !database.contains("/") else {
            throw IsletError(.invalidRequest, "The PostgreSQL address names no database: postgres://\(username)@\(host)/database.")
        }
        let port = url.port ?? 5432
        guard (1...65_535).contains(port) else {
            throw IsletError(.invalidRequest, "The PostgreSQL port must be 1–65535, not \(port).")
        }
        if let query = url.query, !query.isEmpty {
            throw IsletError(.invalidRequest, "The PostgreSQL address takes no parameters (\(query.prefix(100))); TLS and the rest are settings of their own.")
        }
        self.host = host
        self.port = port
        self.username = username
        self.password = url.password
        self.database = database
    }

    /// The address without its password: what logs and `/healthz` may show.
    public var redacted: String {
        "postgres://\(username)@\(host):\(port)/\(database)"
    }

    /// postgres-nio's client configuration for this address (no TLS: the database is expected on
    /// a trusted network, as the README's "Running several nodes" will say).
    public var clientConfiguration: PostgresClient.Configuration {
        PostgresClient.Configuration(host: host, port: port, username: username, password: password, database: database, tls: .disable)
    }
}
