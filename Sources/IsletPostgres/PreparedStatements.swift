import Foundation
import Logging
import PostgresNIO
import Synchronization

/// The statements prepared on each connection of a store's pool, by their text: the first run
/// of a statement on a connection prepares it (a round trip), every later one runs it by name,
/// so PostgreSQL parses and plans it once per connection instead of at every run.
///
/// The parameters' types are PostgreSQL's inference from the statement, so a value is bound as
/// the type its column or cast says (`LIMIT $1` an `int8`, as Swift's `Int` is sent).
final class PreparedStatements: Sendable {
    /// Statement texts kept per connection; past it, a statement runs unprepared (a listing's
    /// filter can make many texts; the hot statements are prepared long before).
    static let maximumPerConnection = 400

    /// A connection's statements, with the connection (to tell a closed one).
    private struct Held {
        let connection: PostgresConnection
        var statements: [String: PreparedQuery] = [:]
    }

    private let prepared = Mutex<[PostgresConnection.ID: Held]>([:])

    /// The prepared statement for `sql` on `connection`, preparing it first if needed; `nil`
    /// when the connection holds as many as it may.
    func statement(_ sql: String, on connection: PostgresConnection, logger: Logger) throws -> PreparedQuery? {
        // A connection of a pool made after a failover may have a closed one's id: its own only.
        let known = prepared.withLock { held in
            held[connection.id].flatMap { $0.connection === connection ? ($0.statements[sql], $0.statements.count) : nil }
        }
        if let (statement, _) = known, let statement { return statement }
        if let (_, count) = known, count >= Self.maximumPerConnection { return nil }
        let statement = try connection.prepare(query: sql).answered(on: connection).wait()
        prepared.withLock { prepared in
            // A pool whose connections come and go (an outage) leaves entries of closed ones.
            if prepared[connection.id]?.connection !== connection {
                prepared = prepared.filter { !$0.value.connection.isClosed }
                prepared[connection.id] = nil
            }
            prepared[connection.id, default: Held(connection: connection)].statements[sql] = statement
        }
        return statement
    }

    /// Forgets a closed connection's statements.
    func forget(_ connection: PostgresConnection) {
        _ = prepared.withLock { $0.removeValue(forKey: connection.id) }
    }

    /// A value as the prepared path binds it: binary, as postgres-nio encodes the type.
    static func data(_ value: (any PostgresDynamicTypeEncodable)?) -> PostgresData {
        guard let value else { return .null }
        var buffer = ByteBuffer()
        value.encode(into: &buffer, context: .default)
        return PostgresData(type: value.psqlType, formatCode: value.psqlFormat, value: buffer)
    }
}
