import Foundation
import GRDB
import IsletCore
@testable import IsletStore
import IsletTestSupport
import Testing

/// `islet restore` (`SQLiteBackup.restore`) of a database some node still writes.
@Suite("Restore", .hangDetector)
struct RestoreTests {
    /// A live node's `islet.sqlite` keeps its newest transactions in the write-ahead log beside
    /// it. The restore copied the main file alone and printed the counts it had read through the
    /// log (issue 41: events up to #300, the copy ending at #240); the copy now holds what it says.
    @Test func aRestoreOfALiveDatabaseHoldsItsLogsTransactionsAndSaysWhatItHolds() async throws {
        try await EngineFixture.with { fixture in
            let id = try await fixture.start(ride(0)).id
            for speed in 1...40 {
                _ = try await fixture.engine.apply(update(["speed": .integer(Int64(speed))]), to: id, owner: nil)
            }
            let log = try FileManager.default.attributesOfItem(atPath: fixture.path + "-wal")[.size] as? Int ?? 0
            #expect(log > 0, "the live database's newest transactions are in its log")
            let target = fixture.directory.appendingPathComponent("restored")
            try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
            let restoredPath = target.appendingPathComponent("islet.sqlite").path
            let (summary, kept) = try SQLiteBackup.restore(fixture.path, to: restoredPath)
            #expect(kept == nil)
            let newest = try await fixture.engine.history(of: id, owner: nil).map(\.id).max()
            #expect(summary.lastEventId == newest)
            var configuration = Configuration()
            configuration.readonly = true
            let restored = try DatabaseQueue(path: restoredPath, configuration: configuration)
            let (lastEvent, activities) = try await restored.read { db in
                (try Int64.fetchOne(db, sql: "SELECT MAX(id) FROM event"), try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM activity"))
            }
            try restored.close()
            #expect(lastEvent == summary.lastEventId && activities == summary.activities, "the copy holds what the restore printed")
            #expect(!FileManager.default.fileExists(atPath: restoredPath + ".restoring"))
        }
    }
}
