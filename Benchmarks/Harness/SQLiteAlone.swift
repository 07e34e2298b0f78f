import ArgumentParser
import Foundation
import GRDBSQLite
import IsletStore

/// `islet-bench sqlite`: SQLite alone doing what Islet's writer does for each update — read the
/// activity's body, save the activity, add the event, each change in its own savepoint, many
/// changes per transaction — on a database Islet made (its schema, indexes and rows), through
/// SQLite's C API on one thread: no HTTP, no Swift above the C calls. The rate Islet's single
/// writer cannot pass on this machine, whatever is done above SQLite.
struct SQLiteAlone: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sqlite",
        abstract: "SQLite alone running Islet's change statements on a database Islet made: the ceiling of Islet's writer."
    )

    @OptionGroup var systems: Systems

    @Option(help: "Activities updated round-robin.")
    var activities = 1000

    @Option(help: "Changes per transaction (comma-separated).")
    var batch = "25,64"

    @Option(help: "Durabilities (comma-separated): full, normal.")
    var durability = "full,normal"

    @Option(help: "Seconds measured per line.")
    var seconds = 5.0

    @Option(help: "Content state: tiny or 2KB.")
    var size = "tiny"

    @Option(help: "Indexes dropped before measuring (comma-separated): what each one costs a change.")
    var dropIndex = ""

    @Flag(help: "Save with the UPDATE of the columns a new content changes (Islet's first try), not the upsert.")
    var narrowSave = false

    func run() async throws {
        guard let size = PayloadSize(rawValue: size) else { throw ValidationError("Unknown size \(size); tiny or 2KB.") }
        let batches = try batch.split(separator: ",").map { text in
            guard let count = Int(text), count > 0 else { throw ValidationError("A batch is a positive number, not \(text).") }
            return count
        }
        for durability in durability.split(separator: ",").map(String.init) {
            guard ["full", "normal"].contains(durability) else { throw ValidationError("Unknown durability \(durability).") }
            let path = try await database(size: size)
            defer { try? FileManager.default.removeItem(at: path.deletingLastPathComponent().deletingLastPathComponent()) }
            for batch in batches {
                print(try measure(path.path, durability: durability, batch: batch, size: size))
            }
        }
    }

    /// Islet's own database with the fleet started and updated once each, the server stopped.
    private func database(size: PayloadSize) async throws -> URL {
        let fleet = Fleet(activities: activities, devices: max(1, activities / 100))
        let target = try await IsletTarget.start(systems, durability: "full", fleet: fleet, transport: .sse)
        let publisher = try await target.publisher()
        for index in 0..<activities {
            _ = try await publisher.update(index, state: size.state(sequence: index))
        }
        await publisher.close()
        target.server.stop(keepingDirectory: true)
        return target.server.directory.appendingPathComponent("data/islet.sqlite")
    }

    /// Runs the change statements for `seconds` and returns the result line.
    private func measure(_ path: String, durability: String, batch: Int, size: PayloadSize) throws -> String {
        let db = try SQLite(path: path)
        try db.execute("PRAGMA journal_mode = WAL")
        try db.execute("PRAGMA synchronous = \(durability.uppercased())")
        try db.execute("PRAGMA wal_autocheckpoint = 10000")
        try db.execute("PRAGMA journal_size_limit = \(8 << 20)")
        for index in dropIndex.split(separator: ",") { try db.execute("DROP INDEX IF EXISTS \(index)") }
        let rows = try db.activities()
        let begin = try db.prepare("BEGIN IMMEDIATE"), commit = try db.prepare("COMMIT")
        let savepoint = try db.prepare("SAVEPOINT change"), release = try db.prepare("RELEASE change")
        let read = try db.prepare(ChangeStatements.activityBody)
        let save = try db.prepare(narrowSave ? ChangeStatements.saveContent : ChangeStatements.saveActivity)
        let append = try db.prepare(ChangeStatements.insertEvent)
        let link = try db.prepare(ChangeStatements.linkEvent)

        var changes = 0, transactions = 0
        let cpu = ThreadCPU()
        let clock = ContinuousClock()
        let end = clock.now.advanced(by: .seconds(seconds))
        while clock.now < end {
            try begin.run()
            for _ in 0..<batch {
                let row = rows[changes % rows.count]
                let now = Date().timeIntervalSince1970
                try savepoint.run()
                try read.bind([.text(row.id)])
                let stored = try read.text() ?? ""
                // The body a change writes: the stored one with the new content, about as long.
                let state = size.state(sequence: changes)
                let body = String(stored.dropLast()) + #","seq":\#(changes)}"#
                if narrowSave {
                    try save.bind([
                        .real(row.relevanceScore), .real(now), .text(body), .text(row.id), .text(row.state),
                        row.deadline.map(SQLite.Value.real) ?? .null, .real(row.startTime),
                    ])
                } else {
                    try save.bind([
                    .text(row.id), .text(row.bundleId), .text(row.deviceId), .text(row.attributesType), .text(row.state),
                    row.key.map(SQLite.Value.text) ?? .null, row.deadline.map(SQLite.Value.real) ?? .null, .real(row.relevanceScore),
                    .real(row.startTime), .real(row.createdAt), .real(now), .text(body), row.channelId.map(SQLite.Value.text) ?? .null,
                    ])
                }
                try save.run()
                try append.bind([
                    .real(now), .text("contentUpdated"), .text(row.bundleId), .text(row.deviceId), .text(row.id),
                    .text(#"{"content":{"relevanceScore":0,"state":\#(state)},"timestamp":\#(now)}"#),
                ])
                try append.run()
                try link.bind([.integer(sqlite3_last_insert_rowid(db.handle)), .text(row.id)])
                try link.run()
                try release.run()
                changes += 1
            }
            try commit.run()
            transactions += 1
            // Islet's checkpointer runs a passive checkpoint every 100 transactions (on a
            // connection and thread of its own; here inline, its CPU counted).
            if transactions % 100 == 0 { sqlite3_wal_checkpoint_v2(db.handle, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil) }
        }
        let used = cpu.seconds
        let rate = Double(changes) / seconds
        let variant = (narrowSave ? ", narrow save" : "") + (dropIndex.isEmpty ? "" : ", without \(dropIndex)")
        return "sqlite alone (Islet's schema and change statements\(variant), C API, one thread, synchronous=\(durability.uppercased()))"
            + " \(size.rawValue), \(grouped(Double(rows.count))) activities, \(batch) changes per transaction:"
            + " \(grouped(rate)) updates/s (CPU per update \(grouped(used / Double(changes) * 1e6)) µs, \(grouped(Double(transactions) / seconds)) commits/s)"
    }
}

/// The CPU time of the calling thread.
private struct ThreadCPU {
    private let start = Self.now()

    var seconds: Double { Self.now() - start }

    private static func now() -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(1), &usage)  // RUSAGE_THREAD
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
}

/// The few SQLite C calls the measurement needs.
private final class SQLite {
    enum Value {
        case text(String), real(Double), integer(Int64), null
    }

    struct Row {
        var id, bundleId, deviceId, attributesType, state: String
        var key: String?
        var deadline: Double?
        var relevanceScore, startTime, createdAt: Double
        var channelId: String?
    }

    final class Statement {
        let handle: OpaquePointer
        let db: SQLite

        init(_ handle: OpaquePointer, db: SQLite) {
            self.handle = handle
            self.db = db
        }

        deinit { sqlite3_finalize(handle) }

        func bind(_ values: [Value]) throws {
            sqlite3_reset(handle)
            for (index, value) in values.enumerated() {
                let position = Int32(index + 1)
                let code: Int32
                switch value {
                case .text(let text): code = sqlite3_bind_text(handle, position, text, -1, SQLite.transient)
                case .real(let real): code = sqlite3_bind_double(handle, position, real)
                case .integer(let integer): code = sqlite3_bind_int64(handle, position, integer)
                case .null: code = sqlite3_bind_null(handle, position)
                }
                try db.check(code)
            }
        }

        /// Runs the statement to its end.
        func run() throws {
            var code = sqlite3_step(handle)
            while code == SQLITE_ROW { code = sqlite3_step(handle) }
            sqlite3_reset(handle)
            guard code == SQLITE_DONE else { throw db.failure(code) }
        }

        /// The first column of the first row, as text.
        func text() throws -> String? {
            defer { sqlite3_reset(handle) }
            let code = sqlite3_step(handle)
            guard code == SQLITE_ROW else {
                if code == SQLITE_DONE { return nil }
                throw db.failure(code)
            }
            return sqlite3_column_text(handle, 0).map { String(cString: $0) }
        }
    }

    static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
    let handle: OpaquePointer

    init(path: String) throws {
        var handle: OpaquePointer?
        let code = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE, nil)
        guard code == SQLITE_OK, let handle else { throw HarnessError("Cannot open \(path): SQLite code \(code)") }
        self.handle = handle
    }

    deinit { sqlite3_close_v2(handle) }

    func execute(_ sql: String) throws {
        try check(sqlite3_exec(handle, sql, nil, nil, nil))
    }

    func prepare(_ sql: String) throws -> Statement {
        var statement: OpaquePointer?
        try check(sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil))
        return Statement(statement!, db: self)
    }

    func check(_ code: Int32) throws {
        guard code == SQLITE_OK else { throw failure(code) }
    }

    func failure(_ code: Int32) -> HarnessError {
        HarnessError("SQLite code \(code): \(String(cString: sqlite3_errmsg(handle)))")
    }

    /// Every activity's columns, as a change binds them.
    func activities() throws -> [Row] {
        let statement = try prepare(
            "SELECT id, bundleId, deviceId, attributesType, state, key, deadline, relevanceScore, startTime, createdAt, channelId FROM activity"
        )
        var rows: [Row] = []
        let h = statement.handle
        func text(_ column: Int32) -> String? { sqlite3_column_text(h, column).map { String(cString: $0) } }
        func real(_ column: Int32) -> Double? { sqlite3_column_type(h, column) == SQLITE_NULL ? nil : sqlite3_column_double(h, column) }
        while sqlite3_step(h) == SQLITE_ROW {
            rows.append(Row(
                id: text(0)!, bundleId: text(1)!, deviceId: text(2)!, attributesType: text(3)!, state: text(4)!, key: text(5),
                deadline: real(6), relevanceScore: real(7) ?? 0, startTime: real(8) ?? 0, createdAt: real(9) ?? 0, channelId: text(10)
            ))
        }
        sqlite3_reset(h)
        guard !rows.isEmpty else { throw HarnessError("The database has no activity.") }
        return rows
    }
}
