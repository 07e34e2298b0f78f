import Foundation
import GRDB
import IsletCore
@testable import IsletStore
import Synchronization
import Testing

/// A full disk, simulated by capping the database's pages (`PRAGMA max_page_count`) under
/// concurrent writers: every change is either acknowledged and stored, or refused as
/// `unavailable` and absent; the store says it cannot write, and recovers when space returns.
@Suite("Disk full")
struct DiskFullTests {
    /// Caps (or uncaps) the file's size on the writer's connection, as a full disk would.
    private func cap(_ store: SQLiteStore, extraPages: Int?) async throws {
        try await store.pool.writeWithoutTransaction { db in
            if let extraPages {
                let pages = try Int.fetchOne(db, sql: "PRAGMA page_count")!
                try db.execute(sql: "PRAGMA max_page_count = \(pages + extraPages)")
            } else {
                try db.execute(sql: "PRAGMA max_page_count = 1073741823")
            }
        }
    }

    @Test func acknowledgedEqualsPersistedAndHealthTellsAndRecovers() async throws {
        let healthChanges = Mutex<[String]>([])
        let fixture = try await StoreFixture()
        let onHealth: @Sendable (WriteFailure?) -> Void = { failure in
            healthChanges.withLock { $0.append(failure == nil ? "recovered" : "failing") }
        }
        var store = try SQLiteStore(path: fixture.path, onWriteHealth: onHealth)
        let activity = try await store.request(ride(0), bundleId: "com.example.bike", now: t0).activity
        #expect(await store.checkWrites() == nil)

        try await cap(store, extraPages: 4)
        let filler = String(repeating: "x", count: 3000)
        let results = await withTaskGroup(of: (Int64, Bool, ErrorReason?).self) { group in
            for speed in Int64(1)...80 {
                group.addTask { [store] in
                    let update = ContentUpdate(content: ActivityContent(state: ["speed": .integer(speed), "pad": .string(filler)]))
                    do {
                        _ = try await store.apply(.update(update), to: activity.id, owner: nil, now: at(Double(speed)))
                        return (speed, true, nil)
                    } catch let error as IsletError {
                        return (speed, false, error.reason)
                    } catch {
                        return (speed, false, nil)
                    }
                }
            }
            var results: [(Int64, Bool, ErrorReason?)] = []
            for await result in group { results.append(result) }
            return results
        }
        let acknowledged = Set(results.filter(\.1).map(\.0))
        let refused = results.filter { !$0.1 }
        #expect(!refused.isEmpty, "the cap never filled")
        #expect(refused.allSatisfy { $0.2 == .unavailable }, "\(refused)")
        // The store said so as it happened (a probe may pass again now: freed pages fit one change).
        #expect(healthChanges.withLock { $0.first } == "failing")

        // A restart (the cap is per connection, so it is gone) reads exactly what was acknowledged.
        store = try SQLiteStore(path: fixture.path, onWriteHealth: onHealth)
        let applied = try await store.history(of: activity.id, owner: nil)
            .filter { $0.type == .contentUpdated }
            .compactMap { try? $0.decoded().data["content"]?["state"]?["speed"] }
            .compactMap { value -> Int64? in if case .integer(let speed) = value { speed } else { nil } }
        #expect(Set(applied) == acknowledged)
        #expect(applied.count == acknowledged.count)
        #expect(try await store.pool.read { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") } == "ok")
    }

    @Test func healthRecoversWhenSpaceReturnsWithoutAnyChange() async throws {
        let fixture = try await StoreFixture()
        let store = fixture.store!
        let activity = try await store.request(ride(0), bundleId: "com.example.bike", now: t0).activity
        try await cap(store, extraPages: 0)
        let big = ActivityContent(state: ["pad": .string(String(repeating: "y", count: 3500))])
        var refusals = 0
        for second in 1...20 {
            do {
                _ = try await store.apply(.update(ContentUpdate(content: big)), to: activity.id, owner: nil, now: at(Double(second)))
            } catch let error as IsletError {
                #expect(error.reason == .unavailable)
                refusals += 1
            }
        }
        #expect(refusals > 0)
        let failure = await store.checkWrites()
        #expect(failure?.message.contains("disk is full") == true)
        #expect(await store.checkWrites() != nil, "still full: the probe write fails too")
        try await cap(store, extraPages: nil)
        #expect(await store.checkWrites() == nil)
    }

    @Test func aDiskThatFillsWhileNothingChangesIsFoundByTheProbe() async throws {
        let fixture = try await StoreFixture()
        let store = fixture.store!
        _ = try await store.request(ride(0), bundleId: "com.example.bike", now: t0)
        try await cap(store, extraPages: 0)
        // No change has failed; a write just succeeded, so a health check trusts it…
        #expect(await store.checkWrites() == nil)
        // …until the store has been quiet for the interval: then the probe finds the full disk.
        let failure = await store.checkWrites(quietInterval: .zero)
        #expect(failure?.message.contains("disk is full") == true)
        #expect(await store.checkWrites() != nil, "a failure lasts until a write succeeds")
        try await cap(store, extraPages: nil)
        #expect(await store.checkWrites() == nil)
    }
}
