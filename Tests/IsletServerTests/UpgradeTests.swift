import Foundation
import GRDB
import IsletCore
import IsletEngine
import IsletPostgres
import IsletServer
import IsletStore
import IsletTestSupport
import Logging
import Testing

/// Every earlier schema version, upgraded (docs/operations.md, "Upgrades"): each fixture in
/// Tests/Upgrades/Fixtures was made by the code of that version (`Tests/Upgrades/make-fixtures`:
/// its `islet serve` driven by scenario.py, which also read everything back through the REST
/// API into expected.json). The current server opens it, migrates it, and answers the same reads
/// with every member of every old answer still there and equal. The server's clock is set before
/// anything the scenario made, so no deadline, retry or lease moves the data while it is read.
@Suite("Upgrades from every earlier schema version", .serialized, .hangDetector)
struct UpgradeTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../Upgrades/Fixtures").standardized

    static func names(_ prefix: String) -> [String] {
        let all = (try? FileManager.default.contentsOfDirectory(atPath: fixtures.path)) ?? []
        // sqlite-v2 before sqlite-v10.
        return all.filter { $0.hasPrefix(prefix) }.sorted { $0.compare($1, options: .numeric) == .orderedAscending }
    }

    /// What the scenario did and read, with the version that made the fixture.
    struct Expected: Decodable {
        struct Read: Decodable {
            var path: String
            var key: String
            var answer: JSONValue
        }

        var startedAt: Double
        var appKey: String?
        var ran: [String]
        var reads: [Read]
    }

    static func expected(_ name: String) throws -> Expected {
        let data = try Data(contentsOf: fixtures.appendingPathComponent("\(name)/expected.json"))
        return try JSONDecoder().decode(Expected.self, from: data)
    }

    /// A new migration makes the version before it an earlier one: its fixture is then due.
    @Test func thereIsAFixtureForEveryEarlierSchemaVersion() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("islet-latest-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("islet.sqlite").path
        do { _ = try SQLiteStore(path: path) }
        let latest = try SQLiteBackup.check(path).migration
        let number = try #require(Int(latest.prefix { $0 != ":" }.dropFirst()), "\(latest)")
        #expect(Self.names("sqlite-") == (1..<number).map { "sqlite-v\($0)" })
        #expect(Self.names("postgres-") == (1..<PostgresMigrator.latest).map { "postgres-\($0)" })
    }

    @Test(arguments: names("sqlite-"))
    func anSQLiteDataDirectoryOpensMigratesAndKeepsEverything(_ name: String) async throws {
        let expected = try Self.expected(name)
        let fixture = Self.fixtures.appendingPathComponent(name)
        try await withIslet(
            serverClock: ManualClock(now: Date(timeIntervalSince1970: expected.startedAt)),
            data: { directory in
                for file in ["islet.sqlite", "admin.key"] {
                    try FileManager.default.copyItem(at: fixture.appendingPathComponent(file), to: directory.appendingPathComponent(file))
                }
            }
        ) { islet in
            try await Self.replay(expected, on: islet, name: name)
        }
    }

    @Test(.enabled(if: PostgresServer.available), arguments: names("postgres-"))
    func aPostgreSQLDatabaseOpensMigratesAndKeepsEverything(_ name: String) async throws {
        let expected = try Self.expected(name)
        let fixture = Self.fixtures.appendingPathComponent(name)
        let database = try await PostgresServer.newDatabase()
        try await PostgresServer.execute(try String(contentsOf: fixture.appendingPathComponent("islet.sql"), encoding: .utf8), in: database)
        let adminKey = try String(contentsOf: fixture.appendingPathComponent("admin.key"), encoding: .utf8)
        try await withIslet(
            { configuration in
                configuration.store.database = database
                configuration.server.adminKey = adminKey
            },
            serverClock: ManualClock(now: Date(timeIntervalSince1970: expected.startedAt)),
            openStore: { try await PostgresStore.open($0, logger: Logger(label: "islet.postgres")) }
        ) { islet in
            try await Self.replay(expected, on: islet, name: name)
        }
    }

    /// Each read again, on the upgraded data: every member of the old answer is in the new one.
    static func replay(_ expected: Expected, on islet: Harness, name: String) async throws {
        #expect(expected.ran.contains("activities in every state"), "\(name): the scenario made no activities")
        #expect(expected.reads.count >= 10, "\(name): \(expected.reads.count) reads")
        for read in expected.reads {
            let reply = try await islet.request(.GET, read.path, key: read.key == "admin" ? islet.admin : expected.appKey)
            #expect(reply.status == 200, "\(name): GET \(read.path): \(reply.status) \(reply.text.prefix(300))")
            let differences = Self.differences(read.answer, reply.json, at: "")
            #expect(differences.isEmpty, "\(name): GET \(read.path): \(differences.prefix(5).joined(separator: "; "))")
        }
    }

    /// Where `new` lacks or changes what `old` has: an object may gain members, nothing else.
    static func differences(_ old: JSONValue, _ new: JSONValue, at path: String) -> [String] {
        switch (old, new) {
        case (.object(let before), .object(let after)):
            return before.keys.sorted().flatMap { key in
                after[key].map { differences(before[key]!, $0, at: "\(path).\(key)") } ?? ["\(path).\(key) is gone"]
            }
        case (.array(let before), .array(let after)):
            guard before.count == after.count else { return ["\(path) had \(before.count) elements, now \(after.count)"] }
            return zip(before, after).enumerated().flatMap { index, pair in differences(pair.0, pair.1, at: "\(path)[\(index)]") }
        case (.integer(let before), .number(let after)) where Double(before) == after: return []
        case (.number(let before), .integer(let after)) where before == Double(after): return []
        default:
            return old == new ? [] : ["\(path) was \(old), now \(new)"]
        }
    }

    @Test func anSQLiteDatabaseFromANewerIsletIsRefusedBeforeAnythingIsWritten() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("islet-newer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("islet.sqlite").path
        do { _ = try SQLiteStore(path: path) }
        let newer = "v99: a migration of a later release"
        let queue = try DatabaseQueue(path: path)
        try queue.inDatabase { db in
            try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES (?)", arguments: [newer])
        }
        try queue.close()
        let before = try Self.schema(at: path)
        let error = try #require(throws: IsletError.self) { try SQLiteStore(path: path) }
        #expect(error.message.contains("was written by a newer Islet: its schema is at \"\(newer)\", and this Islet knows up to \"v"), "\(error.message)")
        #expect(try Self.schema(at: path) == before)
    }

    /// The migrations a database says it has had, and its tables, indexes and triggers.
    static func schema(at path: String) throws -> [String] {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { db in
            try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY rowid")
                + String.fetchAll(db, sql: "SELECT type || ' ' || name || ' ' || COALESCE(sql, '') FROM sqlite_master ORDER BY name")
        }
    }

    @Test(.enabled(if: PostgresServer.available))
    func aPostgreSQLDatabaseFromANewerIsletIsRefused() async throws {
        let database = try await PostgresServer.newDatabase()
        let newer = PostgresMigrator.latest + 1
        try await PostgresServer.execute(
            """
            CREATE TABLE islet_migration (version integer PRIMARY KEY, name text NOT NULL, appliedAt timestamptz NOT NULL DEFAULT now());
            INSERT INTO islet_migration (version, name) VALUES (\(newer), 'a later release');
            """,
            in: database
        )
        await #expect {
            try await PostgresStore.open(StoreOptions(location: database, commitTimeout: .testCommits), logger: Logger(label: "islet.postgres"))
        } throws: { error in
            "\(error)".contains("schema version \(newer); this Islet knows up to \(PostgresMigrator.latest)")
        }
        // Nothing was made: the refusal came before the first migration.
        #expect(try await PostgresServer.rows("SELECT to_regclass('activity') IS NULL", in: database) == ["t"])
    }
}
