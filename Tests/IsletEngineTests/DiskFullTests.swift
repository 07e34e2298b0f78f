import Foundation
import GRDB
import IsletCore
@testable import IsletEngine
@testable import IsletStore
import Synchronization
import IsletTestSupport
import Testing

/// A full disk, simulated by capping the database's pages (`PRAGMA max_page_count`) under
/// concurrent writers: every change is either acknowledged and stored, or refused as
/// `unavailable` and absent; the store says it cannot write, and recovers when space returns.
@Suite("Disk full", .hangDetector)
struct DiskFullTests {
    /// Caps (or uncaps) the file's size on the writer's connection, as a full disk would.
    private func cap(_ store: SQLiteStore, extraPages: Int?) async throws {
        try await store.pool.writeWithoutTransaction { db in
            if let extraPages {
                // A full disk is a file that cannot grow: free pages inside it (a migration that
                // rebuilt a table leaves some) would still take writes, so there are none.
                try db.execute(sql: "VACUUM")
                let pages = try Int.fetchOne(db, sql: "PRAGMA page_count")!
                try db.execute(sql: "PRAGMA max_page_count = \(pages + extraPages)")
            } else {
                try db.execute(sql: "PRAGMA max_page_count = 1073741823")
            }
        }
    }

    @Test func acknowledgedEqualsPersistedAndHealthTellsAndRecovers() async throws {
        let healthChanges = Mutex<[String]>([])
        let options: (String) -> StoreOptions = { path in
            StoreOptions(location: path) { failure in
                healthChanges.withLock { $0.append(failure == nil ? "recovered" : "failing") }
            }
        }
        try await EngineFixture.with(storeOptions: options) { fixture in
            let engine = fixture.engine
            let activity = try await fixture.start(ride(0))
            #expect(await engine.writeFailure() == nil)

            try await cap(fixture.sqlite, extraPages: 4)
            let filler = String(repeating: "x", count: 3000)
            let results = await withTaskGroup(of: (Int64, Bool, ErrorReason?).self) { group in
                for speed in Int64(1)...80 {
                    group.addTask {
                        let error = await reason {
                            _ = try await engine.apply(update(["speed": .integer(speed), "pad": .string(filler)]), to: activity.id, owner: nil)
                        }
                        return (speed, error == nil, error)
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
            try await fixture.restart()
            let applied = try await fixture.engine.history(of: activity.id, owner: nil)
                .filter { $0.type == .contentUpdated }
                .compactMap { try? $0.decoded().data["content"]?["state"]?["speed"] }
                .compactMap { value -> Int64? in if case .integer(let speed) = value { speed } else { nil } }
            #expect(Set(applied) == acknowledged)
            #expect(applied.count == acknowledged.count)
            #expect(try await fixture.sqlite.pool.read { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") } == "ok")
        }
    }

    @Test func healthRecoversWhenSpaceReturnsWithoutAnyChange() async throws {
        try await EngineFixture.with { fixture in
            let engine = fixture.engine
            let activity = try await fixture.start(ride(0))
            try await cap(fixture.sqlite, extraPages: 0)
            var refusals = 0
            for second in 1...20 {
                fixture.clock.set(at(Double(second)))
                if let refusal = await reason({
                    _ = try await engine.apply(update(["pad": .string(String(repeating: "y", count: 3500))]), to: activity.id, owner: nil)
                }) {
                    #expect(refusal == .unavailable)
                    refusals += 1
                }
            }
            #expect(refusals > 0)
            let failure = await engine.writeFailure()
            #expect(failure?.message.contains("disk is full") == true)
            #expect(await engine.writeFailure() != nil, "still full: the probe write fails too")
            try await cap(fixture.sqlite, extraPages: nil)
            #expect(await engine.writeFailure() == nil)
        }
    }

    @Test func aDiskThatFillsWhileNothingChangesIsFoundByTheProbe() async throws {
        try await EngineFixture.with { fixture in
            let engine = fixture.engine
            try await fixture.start(ride(0))
            try await cap(fixture.sqlite, extraPages: 0)
            // No change has failed; a write just succeeded, so a health check trusts it…
            #expect(await engine.writeFailure() == nil)
            // …until the store has been quiet for the interval: then the probe finds the full disk.
            let failure = await engine.writeFailure(quietInterval: .zero)
            #expect(failure?.message.contains("disk is full") == true)
            #expect(await engine.writeFailure() != nil, "a failure lasts until a write succeeds")
            try await cap(fixture.sqlite, extraPages: nil)
            #expect(await engine.writeFailure() == nil)
        }
    }
}
