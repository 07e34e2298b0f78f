import Foundation
import IsletCore
import IsletEngine
import IsletSQL
import Logging
import PostgresNIO

/// The SQL store's driver for PostgreSQL: one connection, used synchronously — the engine's
/// use cases are synchronous closures (the `Store` protocol), so the PostgreSQL store runs them
/// on threads of its own that wait for each statement's answer. Never used on an event loop or
/// Swift's cooperative pool.
///
/// - Statements are sent with the extended query protocol, values bound, never spliced into
///   the SQL; each statement text is prepared once per connection and run by name after that
///   (`PreparedStatements`), so PostgreSQL parses and plans it once.
/// - In a write transaction, what a change reads it locks, as `locking` says (docs/cluster.md,
///   "Isolation"). Its writes wait until it reads or ends (`execute`); a savepoint that undoes
///   only that change is set before the first write that goes while the change can still fail.
final class PostgresSession: SQLSession {
    let connection: PostgresConnection
    let dialect = SQLDialect.postgresql
    /// A read is a round trip: what a transaction read that changes rarely is kept.
    let caches = true
    /// How far a reader reads events: what the node's tail published.
    var eventHorizon: EventID?
    let logger: Logger
    private let prepared: PreparedStatements?
    /// How the reads of a write transaction lock what they read.
    var locking: Locking = .none
    /// Rows read in this transaction that change rarely (activity types, an activity's phone
    /// state), kept until a write to them or the change that read them is undone.
    var cache = TransactionCache()
    /// The change running in the transaction, and whether it has set its savepoint.
    private var change: (number: Int, savepoint: Bool)?
    /// The change's writes not sent yet: they go when it reads (which must see them) or ends.
    private var pending: [Write] = []
    /// Activities that changes which held wrote, not sent yet: they go together before anything
    /// that could see them, or as the batch ends.
    private var activities = ActivityWrites()

    /// A write waiting to be sent.
    private enum Write {
        case statement(String, [(any PostgresDynamicTypeEncodable)?])
        case activity(ActivityColumns)
    }

    init(connection: PostgresConnection, logger: Logger, prepared: PreparedStatements? = nil) {
        self.connection = connection
        self.logger = logger
        self.prepared = prepared
    }

    // MARK: Statements

    func rows<T>(_ sql: String, _ values: [(any SQLBindable)?], reading: ActivityID?, _ read: (any SQLRow) throws -> T) throws -> [T] {
        try query(sql, Self.encodable(values), reading: reading).map { try read(PostgresRow.Columns($0)) }
    }

    /// Runs a statement with `values` for `$1`, `$2`…; returns its rows. The writes not yet
    /// sent go first, so that what it reads includes them — but for a read of one activity
    /// (`reading`), which the other changes' waiting activity rows cannot be.
    @discardableResult
    func query(_ sql: String, _ values: [(any PostgresDynamicTypeEncodable)?] = [], reading id: ActivityID? = nil) throws -> [PostgresRow] {
        if id.map(activities.holds) ?? true { try flushActivities() }
        try flush(guarded: true)
        return try send(sql, values)
    }

    /// Sends a statement through the prepared path, as it is.
    @discardableResult
    private func send(_ sql: String, _ values: [(any PostgresDynamicTypeEncodable)?]) throws -> [PostgresRow] {
        do {
            if let prepared, let statement = try prepared.statement(sql, on: connection, logger: logger) {
                return try connection.run(statement, binds: values.map(PreparedStatements.data)).wait()
            }
            return try connection.run(Self.query(sql, values), logger: logger).wait().rows
        } catch {
            throw closing(after: error)
        }
    }

    /// A write whose answer the change does not need: in a change it waits until the change
    /// reads or ends, so a change that writes once and ends (most updates) sends it alone,
    /// without a savepoint (`endChange`); outside a change it runs now.
    func execute(_ sql: String, _ values: [(any SQLBindable)?]) throws {
        let values = Self.encodable(values)
        guard change != nil else {
            try send(sql, values)
            return
        }
        pending.append(.statement(sql, values))
    }

    /// Writes an activity's row: in a change, as `execute`; when the change holds and wrote
    /// nothing else, with the batch's other activities, in one statement (`ActivityWrites`).
    func save(_ row: ActivityColumns) throws {
        guard change != nil else {
            let statement = ActivityWrites.statement(row)
            try send(statement.sql, statement.values)
            return
        }
        pending.append(.activity(row))
    }

    /// Sends the activities waiting from the changes that held: one statement for all.
    func flushActivities() throws {
        guard !activities.isEmpty else { return }
        let rows = activities.take()
        let statement = rows.count == 1 ? ActivityWrites.statement(rows[0]) : ActivityWrites.statement(rows)
        try send(statement.sql, statement.values)
    }

    /// Reads and locks a batch's activities, with their phone state, in one statement, for its
    /// changes to find in `cache` instead of reading each in a round trip of its own. One that
    /// another transaction holds is left out (`SKIP LOCKED`: a batch never waits), and the change
    /// about it reads it as usual — and is run again if it is still held.
    func lockActivities(_ ids: Set<ActivityID>) throws {
        guard locking == .nowait, !ids.isEmpty else { return }
        for row in try query(SQLQueries.activityWithPhone + " WHERE a.id = ANY($1) FOR UPDATE OF a SKIP LOCKED", [Array(ids)]) {
            let (id, activity, phone) = try SQLRows.activityWithPhone(PostgresRow.Columns(row))
            cache.activities[id] = activity
            cache.phoneActivities[id] = .some(phone)
        }
    }

    /// Starts a transaction's bookkeeping afresh (what a failed one left is gone with it).
    func beginTransaction(locking: Locking) {
        self.locking = locking
        cache = TransactionCache()
        pending = []
        activities = ActivityWrites()
        change = nil
    }

    func insert(_ sql: String, _ values: [(any SQLBindable)?]) throws -> Int64 {
        try flush(guarded: true)
        try beforeWrite()
        return try send(sql + " RETURNING id", Self.encodable(values)).first.map { try PostgresRow.Columns($0).int64(0) } ?? 0
    }

    func count(_ sql: String, _ values: [(any SQLBindable)?]) throws -> Int {
        try flush(guarded: true)
        try beforeWrite()
        // The unprepared path: postgres-nio's prepared one does not report the count.
        return try unprepared(sql, Self.encodable(values)).metadata.rows ?? 0
    }

    /// Sends the change's waiting writes. `guarded`: after its savepoint, so that the change
    /// can still be undone alone. Unguarded — only as a change that held ends, with one write
    /// waiting — the write goes alone: if it fails, the transaction fails and the writer runs
    /// the batch's changes again one by one.
    private func flush(guarded: Bool) throws {
        guard !pending.isEmpty else { return }
        if guarded || pending.count > 1 { try beforeWrite() }
        let writes = pending
        pending = []
        for write in writes {
            switch write {
            case .statement(let sql, let values): try send(sql, values)
            case .activity(let row):
                let statement = ActivityWrites.statement(row)
                try send(statement.sql, statement.values)
            }
        }
    }

    /// Runs a statement outside the prepared ones: transaction control, and statements whose
    /// row count is wanted (postgres-nio's prepared path does not report it).
    @discardableResult
    func unprepared(_ sql: String, _ values: [(any PostgresDynamicTypeEncodable)?] = []) throws -> PostgresQueryResult {
        do {
            return try connection.run(Self.query(sql, values), logger: logger).wait()
        } catch {
            throw closing(after: error)
        }
    }

    /// Values as postgres-nio binds them.
    static func encodable(_ values: [(any SQLBindable)?]) -> [(any PostgresDynamicTypeEncodable)?] {
        values.map { value -> (any PostgresDynamicTypeEncodable)? in
            switch SQLValue(value) {
            case .null: nil
            case .integer(let integer): integer
            case .real(let real): real
            case .text(let text): text
            case .boolean(let boolean): boolean
            }
        }
    }

    private static func query(_ sql: String, _ values: [(any PostgresDynamicTypeEncodable)?]) -> PostgresQuery {
        var binds = PostgresBindings(capacity: values.count)
        for value in values {
            if let value { binds.append(value) } else { binds.appendNull() }
        }
        return PostgresQuery(unsafeSQL: sql, binds: binds)
    }

    /// A connection that lost its server is closed: the pool makes another instead of handing
    /// it out again, and what is sent on it meanwhile fails (`run`).
    private func closing(after error: any Error) -> any Error {
        if PostgresFailure.storageFailure(error) != nil {
            _ = connection.close() as EventLoopFuture<Void>
            prepared?.forget(connection)
        }
        return error
    }

    // MARK: Changes and locks

    /// Begins a change of the transaction: its writes are undone alone if it fails.
    func beginChange(_ number: Int) {
        change = (number, false)
    }

    /// Ends the change. When it failed, undoes what it wrote (and forgets what the
    /// transaction's cache read meanwhile, which may have been its own writes); a statement that
    /// failed before the change wrote anything left the transaction unable to go on, and its
    /// error is thrown.
    func endChange(failure: (any Error)?) throws {
        defer { change = nil }
        guard let failure else {
            // Only activity rows: they wait for the batch's others (a row of one already
            // waiting sends those first, one statement holding each activity once).
            let rows = pending.compactMap { write -> ActivityColumns? in if case .activity(let row) = write { row } else { nil } }
            guard rows.count == pending.count, Set(rows.map(\.id)).count == rows.count else { return try flush(guarded: false) }
            if rows.contains(where: { activities.holds($0.id) }) { try flushActivities() }
            for row in rows { activities.append(row) }
            pending = []
            return
        }
        pending = []
        cache = TransactionCache()
        if let change, change.savepoint {
            // After an error PostgreSQL takes nothing in the transaction until it is rolled
            // back to before the change.
            try unprepared("ROLLBACK TO SAVEPOINT change\(change.number)")
        } else if PostgresFailure.sqlState(failure) != nil || PostgresFailure.storageFailure(failure) != nil {
            throw failure
        }
    }

    /// Sets the change's savepoint before its first write (or a statement that may fail and
    /// abort the transaction): a change that only read needs none, and costs none.
    func beforeWrite() throws {
        guard var current = change, !current.savepoint else { return }
        // What the earlier changes wrote goes first: the savepoint must not undo it.
        try flushActivities()
        try unprepared("SAVEPOINT change\(current.number)")
        current.savepoint = true
        change = current
    }

    /// Takes the lock named `name` until the transaction ends, as `locking` says: at once or
    /// `PostgresBusy` (a batch), waiting for it (a change run alone), or not at all (a reader).
    /// For what has no row to lock: a device's count, an app's key, a token's holder.
    func lock(_ name: String) throws {
        switch locking {
        case .none:
            return
        case .nowait:
            guard try value("SELECT pg_try_advisory_xact_lock($1)", [Self.lockKey(name)], as: Bool.self) == true else {
                throw SQLBusy(what: name)
            }
        case .wait:
            try query("SELECT pg_advisory_xact_lock($1)", [Self.lockKey(name)])
        }
    }

    /// The clause that locks the rows a statement selects (of the table `alias` names, in a
    /// join), as `locking` says. With `.nowait` the rows another transaction holds are left out
    /// (`SKIP LOCKED`): the reader tells them from rows that are not there.
    func rowLock(of alias: String?) -> String {
        let of = alias.map { " OF \($0)" } ?? ""
        switch locking {
        case .none: return ""
        case .nowait: return " FOR UPDATE\(of) SKIP LOCKED"
        case .wait: return " FOR UPDATE\(of)"
        }
    }

    /// The clause that locks every row a statement selects, or fails if one is held
    /// (`NOWAIT`, after the change's savepoint: the failure undoes the change alone).
    func rowsLock() throws -> String {
        switch locking {
        case .none: return ""
        case .nowait:
            try beforeWrite()
            return " FOR UPDATE NOWAIT"
        case .wait: return " FOR UPDATE"
        }
    }

    /// The advisory lock for a name: FNV-1a of it (stable across nodes and builds, unlike
    /// Swift's `hashValue`), kept clear of the store's own locks' range.
    static func lockKey(_ name: String) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        return Int64(bitPattern: hash | (1 << 62))
    }
}

extension PostgresRow {
    /// A row's columns by name (as the SQL writes them: `bundleId`; PostgreSQL folds unquoted
    /// names to lower case, and so does the lookup) or position.
    struct Columns: SQLRow {
        private let row: PostgresRandomAccessRow

        init(_ row: PostgresRow) {
            self.row = row.makeRandomAccess()
        }

        private func cell(_ column: SQLColumnKey) throws -> PostgresCell {
            switch column {
            case .name(let name):
                let name = name.lowercased()
                guard row.contains(name) else { throw SQLColumnError(column, "not in the row") }
                return Self.binary(row[name])
            case .index(let index):
                guard index < row.count else { throw SQLColumnError(column, "not in the row") }
                return Self.binary(row[index])
            }
        }

        func isNull(_ column: SQLColumnKey) throws -> Bool { try cell(column).bytes == nil }
        func string(_ column: SQLColumnKey) throws -> String { try cell(column).decode(String.self) }
        func int64(_ column: SQLColumnKey) throws -> Int64 { try cell(column).decode(Int64.self) }
        func double(_ column: SQLColumnKey) throws -> Double { try cell(column).decode(Double.self) }
        func bool(_ column: SQLColumnKey) throws -> Bool { try cell(column).decode(Bool.self) }

        /// A cell as it came: every statement asks for binary results, but postgres-nio's prepared
        /// path describes the columns with the format a statement's description has before it is
        /// bound, text, and decoding by it would misread every number and boolean.
        static func binary(_ cell: PostgresCell) -> PostgresCell {
            var cell = cell
            cell.format = .binary
            return cell
        }
    }
}

/// How the store tells a database failure from a use case's refusal.
enum PostgresFailure {
    /// SQLSTATEs after which the whole transaction is run again: a serialization failure and a
    /// deadlock, both of which PostgreSQL resolves by aborting one of the transactions.
    static let retryable: Set<String> = ["40001", "40P01"]

    /// SQLSTATEs after which a change is undone and run again: another transaction holds what
    /// it locks (55P03, `NOWAIT`), or inserted the key it inserts (23505: run again, it finds
    /// the row and answers as the rules say).
    static let busy: Set<String> = ["55P03", "23505"]

    /// The SQLSTATE of a server's error (postgres-nio's prepared path reports it in its older
    /// error type).
    static func sqlState(_ error: any Error) -> String? {
        if case .server(let message)? = error as? PostgresError { return message.fields[.sqlState] }
        return (error as? PSQLError)?.serverInfo?[.sqlState]
    }

    /// What the server said, from either error type.
    static func serverMessage(_ error: any Error) -> String? {
        if case .server(let message)? = error as? PostgresError { return message.fields[.message] }
        return (error as? PSQLError)?.serverInfo?[.message]
    }

    /// Whether `error` says another transaction holds what the change needs, so the change is
    /// undone and run again.
    static func isBusy(_ error: any Error) -> Bool {
        error is SQLBusy || (sqlState(error).map(busy.contains) ?? false)
    }

    /// Whether `error` asks for the transaction to be run again.
    static func isRetryable(_ error: any Error) -> Bool {
        sqlState(error).map(retryable.contains) ?? false
    }

    /// What went wrong, when `error` says the database cannot be reached or cannot take
    /// writes — not a use case's refusal, nor a statement's own mistake.
    static func storageFailure(_ error: any Error) -> String? {
        if let error = error as? PostgresUnavailable { return error.reason }
        if let error = error as? CommitUnconfirmed { return error.description }
        // The socket's own failure, passed on as it is (a primary that crashed resets its
        // connections: `read(…): Connection reset by peer`), or its channel already closed.
        if error is IOError || error is ChannelError { return "PostgreSQL cannot be reached: \(error)" }
        if let error = error as? PostgresError {
            switch error {
            case .server(let message): return serverFailure(state: message.fields[.sqlState] ?? "", message: message.fields[.message] ?? "an error")
            case .connectionClosed, .protocol: return "PostgreSQL cannot be reached: \(error)"
            }
        }
        guard let error = error as? PSQLError else { return nil }
        switch error.code {
        case .server:
            return serverFailure(state: error.serverInfo?[.sqlState] ?? "", message: error.serverInfo?[.message] ?? "an error")
        case .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .poolClosed,
             .sslUnsupported, .failedToAddSSLHandler, .unsupportedAuthMechanism, .authMechanismRequiresPassword, .saslError:
            return "PostgreSQL cannot be reached: \(error.code)"
        default:
            return nil
        }
    }
}

extension PostgresFailure {
    /// Whether `error` says the host is gone or no longer takes writes — the connection lost or
    /// refused, none given in time, the server shutting down (57P01, 57P02, 57P03) or read-only
    /// (25006: a standby, or a primary demoted) — so another host of the address may be the
    /// primary now (docs/cluster.md §7). Not a full disk or too many connections: the host is
    /// still the primary.
    static func losesHost(_ error: any Error) -> Bool {
        if error is PostgresUnavailable { return true }
        if let state = sqlState(error) { return ["25006", "57P01", "57P02", "57P03"].contains(state) || state.hasPrefix("08") }
        guard let failure = storageFailure(error) else { return false }
        return failure.hasPrefix("PostgreSQL cannot be reached")
    }

    /// A server's error that says it cannot take writes. 08: connection exceptions; 53:
    /// insufficient resources (a full disk, too many connections); 57: the operator intervened
    /// (shutdown, crash recovery); 58: I/O. 25006: a read-only transaction (a standby, or the
    /// server in read-only mode).
    static func serverFailure(state: String, message: String) -> String? {
        guard ["08", "53", "57", "58"].contains(String(state.prefix(2))) || state == "25006" else { return nil }
        return "PostgreSQL: \(message) (\(state))"
    }
}

/// The database could not be reached in time.
struct PostgresUnavailable: Error, CustomStringConvertible {
    let reason: String
    var description: String { reason }
}

extension PostgresConnection {
    /// Runs a statement; its answer, or a failure once the connection closes unanswered.
    /// Every statement the store sends goes through here or `run(_:binds:)`.
    func run(_ query: PostgresQuery, logger: Logger) -> EventLoopFuture<PostgresQueryResult> {
        self.query(query, logger: logger).answered(on: self)
    }

    /// Runs a prepared statement; its rows, or a failure once the connection closes unanswered.
    func run(_ statement: PreparedQuery, binds: [PostgresData]) -> EventLoopFuture<[PostgresRow]> {
        statement.execute(binds).answered(on: self)
    }
}

extension EventLoopFuture where Value: Sendable {
    /// This answer, or a failure once `connection` closes without giving it.
    ///
    /// postgres-nio hands a statement to a closed connection's channel and never answers it
    /// (the write's failure is dropped): a `ROLLBACK` after the server ended the session, or any
    /// statement on a connection that closed as it was leased, would wait forever — a writer
    /// lane held, a shutdown that never ends.
    func answered(on connection: PostgresConnection) -> EventLoopFuture<Value> {
        let answer = connection.eventLoop.makePromise(of: Value.self)
        cascade(to: answer)
        // Whichever comes first completes it; the other is ignored.
        connection.closeFuture.whenComplete { _ in
            answer.fail(PostgresUnavailable(reason: "the connection to PostgreSQL closed before it answered"))
        }
        return answer.futureResult
    }
}
