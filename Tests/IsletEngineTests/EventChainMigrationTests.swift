import Foundation
import GRDB
import IsletCore
import IsletEngine
@testable import IsletStore
import IsletTestSupport
import Testing

/// Migration v10 replaced the index of events by activity with a chain (each event names its
/// activity's previous one, the activity keeps the last). A database written before it reads
/// back every activity's history whole and in order, and events added after extend it.
@Suite("Event chain migration", .hangDetector)
struct EventChainMigrationTests {
    @Test func historiesWrittenBeforeTheChainReadBackWholeAndInOrder() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("islet-chain-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("islet.sqlite").path

        // A database as version 9 left it: events found through `event_activity`.
        let old = try DatabasePool(path: path)
        try Schema.migrator.migrate(old, upTo: "v9: channels made at Apple, in an environment")
        try await old.write { db in
            try db.execute(sql: "INSERT INTO app (bundleId, name, createdAt) VALUES ('com.example', 'Example', 0)")
            try db.execute(sql: "INSERT INTO device (id, name, createdAt) VALUES ('d', 'Phone', 0)")
            for id in ["A", "B"] {
                try db.execute(
                    sql: """
                        INSERT INTO activity (id, bundleId, deviceId, attributesType, state, relevanceScore, startTime, createdAt, updatedAt, body)
                        VALUES (?, 'com.example', 'd', 'Ride', 'active', 0, 0, 0, 0, '{}')
                        """,
                    arguments: [id]
                )
            }
            for (index, activity) in ["A", "B", "A", nil, "A", "B"].enumerated() {
                try db.execute(
                    sql: "INSERT INTO event (time, type, bundleId, deviceId, activityId, data) VALUES (?, 'contentUpdated', 'com.example', 'd', ?, ?)",
                    arguments: [Double(index), activity, "{\"n\":\(index)}"]
                )
            }
        }
        try old.close()

        let store = try SQLiteStore(path: path)
        let before = try await store.read { store in (try store.history(of: "A"), try store.history(of: "B")) }
        #expect(before.0.map(\.id) == [1, 3, 5])
        #expect(before.1.map(\.id) == [2, 6])
        #expect(before.0.allSatisfy { $0.json.contains(#""data":{"n":"#) })

        // A change after the migration extends the chain.
        _ = try await store.pool.write { db in
            try SQLiteTransaction(db: db, now: Date(timeIntervalSince1970: 10))
                .append(.alert(Alert(title: "t", body: "b")), bundleId: "com.example", deviceId: "d", activityId: "A")
        }
        let after = try await store.read { store in try store.history(of: "A") }
        #expect(after.map(\.type) == [.contentUpdated, .contentUpdated, .contentUpdated, .alert])
        #expect(after.map(\.id) == [1, 3, 5, 7])
        let remaining = try await store.pool.read { db in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index'") }
        #expect(!remaining.contains("event_activity"))
    }
}
