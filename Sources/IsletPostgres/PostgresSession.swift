import Foundation
import IsletCore
import Logging
import PostgresNIO

/// One connection, used synchronously: the engine's use cases are synchronous closures (the
/// `Store` protocol), so the PostgreSQL store runs them on threads of its own that wait for
/// each statement's answer. Never used on an event loop or Swift's cooperative pool.
///
/// Statements are sent with the extended query protocol — parsed, bound and run, values never
/// spliced into the SQL.
final class PostgresSession {
    let connection: PostgresConnection
    let logger: Logger
    /// What the transaction's rules read that other changes contend for (an activity, a
    /// device's count, an app's key): what the writer locks first when it runs the change again
    /// after a collision (`PostgresWriter`).
    var contended: Set<String> = []

    init(connection: PostgresConnection, logger: Logger) {
        self.connection = connection
        self.logger = logger
    }

    /// Runs a statement with `values` for `$1`, `$2`…; returns its rows.
    @discardableResult
    func query(_ sql: String, _ values: [(any PostgresDynamicTypeEncodable)?] = []) throws -> PostgresQueryResult {
        var binds = PostgresBindings(capacity: values.count)
        for value in values {
            if let value { binds.append(value) } else { binds.appendNull() }
        }
        do {
            return try connection.run(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger).wait()
        } catch {
            // A connection that lost its server is closed: the pool makes another instead of
            // handing it out again, and what is sent on it meanwhile fails (`run`).
            if PostgresFailure.storageFailure(error) != nil { _ = connection.close() as EventLoopFuture<Void> }
            throw error
        }
    }

    /// Runs a statement; returns how many rows it changed.
    @discardableResult
    func execute(_ sql: String, _ values: [(any PostgresDynamicTypeEncodable)?] = []) throws -> Int {
        try query(sql, values).metadata.rows ?? 0
    }

    /// The rows of a statement, each read by `read`.
    func rows<T>(_ sql: String, _ values: [(any PostgresDynamicTypeEncodable)?] = [], _ read: (Columns) throws -> T) throws -> [T] {
        try query(sql, values).rows.map { try read(Columns($0)) }
    }

    /// The first row of a statement, if any, read by `read`.
    func row<T>(_ sql: String, _ values: [(any PostgresDynamicTypeEncodable)?] = [], _ read: (Columns) throws -> T) throws -> T? {
        try query(sql, values).rows.first.map { try read(Columns($0)) }
    }

    /// The first column of every row.
    func values<T: PostgresDecodable>(_ sql: String, _ values: [(any PostgresDynamicTypeEncodable)?] = [], as type: T.Type = T.self) throws -> [T] {
        try query(sql, values).rows.map { row in try row.makeRandomAccess()[0].decode(T.self) }
    }

    /// The first column of the first row, if there is a row.
    func value<T: PostgresDecodable>(_ sql: String, _ values: [(any PostgresDynamicTypeEncodable)?] = [], as type: T.Type = T.self) throws -> T? {
        try self.values(sql, values, as: T.self).first
    }
}

/// A row's columns by name. Names are given as the SQL writes them (`bundleId`); PostgreSQL
/// folds unquoted names to lower case, and so does the lookup.
struct Columns {
    private let row: PostgresRandomAccessRow

    init(_ row: PostgresRow) {
        self.row = row.makeRandomAccess()
    }

    subscript<T: PostgresDecodable>(_ name: String, as type: T.Type = T.self) -> T {
        get throws { try row[name.lowercased()].decode(T.self) }
    }

    /// A time stored as seconds since 1970.
    func date(_ name: String) throws -> Date {
        Date(timeIntervalSince1970: try self[name, as: Double.self])
    }

    /// A time stored as seconds since 1970, or NULL.
    func optionalDate(_ name: String) throws -> Date? {
        try self[name, as: Double?.self].map(Date.init(timeIntervalSince1970:))
    }
}

/// How the store tells a database failure from a use case's refusal.
enum PostgresFailure {
    /// SQLSTATEs after which the whole transaction is run again: a serialization failure and a
    /// deadlock, both of which PostgreSQL resolves by aborting one of the transactions.
    static let retryable: Set<String> = ["40001", "40P01"]

    /// The SQLSTATE of a server's error.
    static func sqlState(_ error: any Error) -> String? {
        (error as? PSQLError)?.serverInfo?[.sqlState]
    }

    /// Whether `error` asks for the transaction to be run again.
    static func isRetryable(_ error: any Error) -> Bool {
        sqlState(error).map(retryable.contains) ?? false
    }

    /// What went wrong, when `error` says the database cannot be reached or cannot take
    /// writes — not a use case's refusal, nor a statement's own mistake.
    static func storageFailure(_ error: any Error) -> String? {
        if let error = error as? PostgresUnavailable { return error.reason }
        guard let error = error as? PSQLError else { return nil }
        switch error.code {
        case .server:
            let state = error.serverInfo?[.sqlState] ?? ""
            let message = error.serverInfo?[.message] ?? "an error"
            // 08: connection exceptions; 53: insufficient resources (a full disk, too many
            // connections); 57: the operator intervened (shutdown, crash recovery); 58: I/O.
            // 25006: a read-only transaction (a standby, or the server in read-only mode).
            if ["08", "53", "57", "58"].contains(String(state.prefix(2))) || state == "25006" {
                return "PostgreSQL: \(message) (\(state))"
            }
            return nil
        case .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .poolClosed,
             .sslUnsupported, .failedToAddSSLHandler, .unsupportedAuthMechanism, .authMechanismRequiresPassword, .saslError:
            return "PostgreSQL cannot be reached: \(error.code)"
        default:
            return nil
        }
    }
}

/// The database could not be reached in time.
struct PostgresUnavailable: Error, CustomStringConvertible {
    let reason: String
    var description: String { reason }
}

extension PostgresConnection {
    /// Runs a statement; its answer, or a failure once the connection closes unanswered.
    ///
    /// postgres-nio hands a statement to a closed connection's channel and never answers it
    /// (the write's failure is dropped): a `ROLLBACK` after the server ended the session, or any
    /// statement on a connection that closed as it was leased, would wait forever — a writer
    /// lane held, a shutdown that never ends. Every statement the store sends goes through here.
    func run(_ query: PostgresQuery, logger: Logger) -> EventLoopFuture<PostgresQueryResult> {
        let answer = eventLoop.makePromise(of: PostgresQueryResult.self)
        self.query(query, logger: logger).cascade(to: answer)
        // Whichever comes first completes it; the other is ignored.
        closeFuture.whenComplete { _ in
            answer.fail(PostgresUnavailable(reason: "the connection to PostgreSQL closed before it answered"))
        }
        return answer.futureResult
    }
}
