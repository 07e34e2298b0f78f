import Foundation
import GRDB
import IsletEngine
@testable import IsletSQL
@testable import IsletStore
import IsletTestSupport
import Testing

/// The sender's claim runs for every delivery: it must read the outbox's unfinished rows through
/// the `delivery_due` index, never the whole table, which keeps every delivery ever made. Once,
/// with an `OR` of two states, SQLite did not use the partial index and scanned them all.
@Suite("Delivery query plans", .hangDetector)
struct DeliveryQueryPlanTests {
    @Test func theClaimReadsTheDueIndexNotTheTable() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("islet-plan-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try SQLiteStore(path: directory.appendingPathComponent("islet.sqlite").path, durability: .normal)
        let plan = try await store.pool.read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + SQLDialect.sqlitePlaceholders(SQLQueries.dueDeliveries(.sqlite, lock: "")), arguments: [0, 10]).map { $0["detail"] as String }
        }
        let reads = plan.filter { $0.hasPrefix("SCAN") || $0.hasPrefix("SEARCH") }
        #expect(!reads.isEmpty)
        // Both states' reads go through `delivery_due`, the oldest-of-its-key check through
        // `delivery_unfinished`; a `SCAN d` would be the whole table.
        #expect(reads.filter { $0.hasPrefix("SEARCH d USING INDEX delivery_due") }.count == 2, "\(plan)")
        #expect(reads.allSatisfy { !$0.hasPrefix("SCAN d") && !$0.hasPrefix("SCAN e") }, "\(plan)")
    }

    @Test func retentionFindsFinishedDeliveriesThroughTheirIndex() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("islet-plan-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try SQLiteStore(path: directory.appendingPathComponent("islet.sqlite").path, durability: .normal)
        let plan = try await store.pool.read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + SQLDialect.sqlitePlaceholders(SQLQueries.finishedDeliveries), arguments: [0, 10])
                .map { $0["detail"] as String }
        }
        #expect(plan.contains { $0.hasPrefix("SEARCH delivery USING") && $0.contains("delivery_finished") }, "\(plan)")
        #expect(!plan.contains { $0.hasPrefix("SCAN delivery") }, "\(plan)")
    }
}
