import Foundation
import GRDB
import IsletEngine
@testable import IsletStore
import IsletTestSupport
import Testing

/// The durability a store is opened with is the one its writer commits with: `full` syncs the
/// log on every commit (an acknowledged change survives the loss of power), `normal` does not.
/// GRDB turns WAL on after the configuration's own setup and sets `synchronous=NORMAL` as it
/// does, which once made `full` quietly mean `normal`.
@Suite("Durability", .hangDetector)
struct DurabilityTests {
    @Test(arguments: [(Durability.full, 2), (.normal, 1)])
    func theWriterCommitsWithTheDurabilityAskedFor(_ durability: Durability, _ pragma: Int) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("islet-durability-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try SQLiteStore(path: directory.appendingPathComponent("islet.sqlite").path, durability: durability)
        let synchronous = try await store.pool.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }
        #expect(synchronous == pragma)
    }
}
