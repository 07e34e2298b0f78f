import Foundation
import GRDB
import IsletCore
import IsletEngine
import IsletSQL

/// The SQL store's driver for SQLite (GRDB): one connection, a reader's or the writer's inside
/// its transaction. Statements run at once — one writer has nobody to meet, so nothing is
/// locked or held back — and each is compiled once per connection (GRDB's statement cache).
final class SQLiteSession: SQLSession {
    let db: Database
    let dialect = SQLDialect.sqlite
    let locking = Locking.none
    let caches = false
    /// Ids become visible in order: every event committed can be read.
    let eventHorizon: EventID? = nil
    var cache = TransactionCache()

    init(_ db: Database) {
        self.db = db
    }

    func rows<T>(_ sql: String, _ values: [(any SQLBindable)?], reading: ActivityID?, _ read: (any SQLRow) throws -> T) throws -> [T] {
        let cursor = try Row.fetchCursor(statement(sql), arguments: Self.arguments(values))
        var rows: [T] = []
        while let row = try cursor.next() {
            rows.append(try read(SQLiteRow(row: row)))
        }
        return rows
    }

    func execute(_ sql: String, _ values: [(any SQLBindable)?]) throws {
        try statement(sql).execute(arguments: Self.arguments(values))
    }

    func count(_ sql: String, _ values: [(any SQLBindable)?]) throws -> Int {
        try execute(sql, values)
        return db.changesCount
    }

    func insert(_ sql: String, _ values: [(any SQLBindable)?]) throws -> Int64 {
        try execute(sql, values)
        return db.lastInsertedRowID
    }

    func lock(_ name: String) throws {}

    func rowLock(of alias: String?) -> String { "" }

    func rowsLock() throws -> String { "" }

    /// The statement compiled, from the connection's cache: statements are few, a listing's
    /// filters making at most a few hundred texts.
    private func statement(_ sql: String) throws -> Statement {
        try db.cachedStatement(sql: SQLDialect.sqlitePlaceholders(sql))
    }

    static func arguments(_ values: [(any SQLBindable)?]) -> StatementArguments {
        // As optional existentials: GRDB's initializer for a sequence of concrete values maps
        // them through a generic key path, which the runtime instantiates anew at every call.
        StatementArguments(values.map { value -> (any DatabaseValueConvertible)? in
            switch SQLValue(value) {
            case .null: nil
            case .integer(let integer): integer.databaseValue
            case .real(let real): real.databaseValue
            case .text(let text): text.databaseValue
            case .boolean(let boolean): boolean.databaseValue
            }
        })
    }
}

/// A row of SQLite's, read by column name (case-insensitively, as SQLite names columns) or
/// position.
struct SQLiteRow: SQLRow {
    let row: Row

    func isNull(_ column: SQLColumnKey) throws -> Bool {
        switch column {
        case .name(let name):
            guard row.hasColumn(name) else { throw SQLColumnError(column, "not in the row") }
            return (row[name] as DatabaseValue).isNull
        case .index(let index):
            return row.hasNull(atIndex: index)
        }
    }

    func string(_ column: SQLColumnKey) throws -> String { try decode(column) }
    func int64(_ column: SQLColumnKey) throws -> Int64 { try decode(column) }
    func double(_ column: SQLColumnKey) throws -> Double { try decode(column) }
    func bool(_ column: SQLColumnKey) throws -> Bool { try decode(column) }

    private func decode<T: DatabaseValueConvertible & StatementColumnConvertible>(_ column: SQLColumnKey) throws -> T {
        switch column {
        case .name(let name): try row.decode(T.self, forColumn: name)
        case .index(let index): try row.decode(T.self, atIndex: index)
        }
    }
}
