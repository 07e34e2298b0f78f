import Foundation
import GRDB
import IsletCore
@testable import IsletEngine
@testable import IsletSQL
@testable import IsletStore
import IsletTestSupport
import Testing

/// Listings come a page at a time, each page starting where the previous one ended: a walk sees
/// every activity that existed when it began exactly once, however many start meanwhile, and a
/// late page costs what the first does.
@Suite("Listing pages", .hangDetector)
struct ListingPageTests {
    /// Activities written straight into the store, many to a transaction: the rules have nothing
    /// to say about a listing, and 100,000 starts one by one would take minutes.
    static func seed(_ count: Int, in fixture: EngineFixture, bundleIds: [BundleID] = ["com.example.bike"]) async throws -> [Activity] {
        var seeded: [Activity] = []
        seeded.reserveCapacity(count)
        for batch in stride(from: 0, to: count, by: 10_000) {
            var activities: [Activity] = []
            for index in batch..<min(count, batch + 10_000) {
                // Few scores and starts, so that many activities share both and the id decides.
                let start = t0.addingTimeInterval(Double(index % 97))
                let score = Double(index % 5) * 25
                let content = ActivityContent(state: ["speed": .integer(Int64(index))], relevanceScore: score)
                activities.append(
                    Activity(
                        id: UUID().uuidString, bundleId: bundleIds[index % bundleIds.count], deviceId: .defaultDevice,
                        attributesType: "RideAttributes", attributes: ["route": "Loop"], content: content,
                        state: .ended, key: "ride-\(index)", createdAt: start, startedAt: start, endedAt: start
                    )
                )
            }
            _ = try await fixture.store.write(now: t0) { [activities] transaction in
                for activity in activities { try transaction.save(activity) }
            }
            seeded += activities
        }
        return seeded
    }

    @Test(arguments: StoreKind.available) func aWalkSeesEveryActivityOnceWhileOthersStart(store: StoreKind) async throws {
        // 100,000 on SQLite, as the console's listing must page; PostgreSQL takes a round trip
        // per row written, so it walks fewer, with pages small enough that there are as many.
        let count = store == .sqlite ? 100_000 : 5_000
        var rules = LifecycleRules()
        rules.maxActivitiesPerDevice = 1_000_000
        rules.maxActivitiesPerApp = 1_000_000
        try await EngineFixture.with(store, rules: rules) { fixture in
            let seeded = try await Self.seed(count, in: fixture)
            var seen: [ActivityID: Int] = [:]
            var walked: [Activity] = []
            var filter = ActivityFilter(limit: store == .sqlite ? 1_000 : 50)
            var pages = 0
            repeat {
                let page = try await fixture.engine.activities(filter)
                for activity in page.items { seen[activity.id, default: 0] += 1 }
                walked += page.items
                pages += 1
                // Others start as the walk goes: the most relevant of all, the least, and in between.
                for relevance in [1_000.0, -1, 50] { try await fixture.start(ride(1, relevance: relevance), at: t0.addingTimeInterval(50)) }
                filter.page = try PageRequest(limit: String(filter.limit), cursor: page.next)
                if page.next == nil { break }
            } while true
            #expect(pages > count / filter.limit)
            #expect(seen.values.allSatisfy { $0 == 1 }, "an activity was listed twice")
            #expect(seeded.allSatisfy { seen[$0.id] == 1 }, "an activity was missed")
            for (earlier, later) in zip(walked, walked.dropFirst()) {
                #expect(Activity.relevanceOrder(earlier, later), "\(earlier.id) listed before \(later.id)")
            }
        }
    }

    @Test(arguments: StoreKind.available) func filtersPageTheirOwnSelection(store: StoreKind) async throws {
        try await EngineFixture.with(store, apps: ["com.example.bike", "com.example.ci"]) { fixture in
            let seeded = try await Self.seed(300, in: fixture, bundleIds: ["com.example.bike", "com.example.ci"])
            var filter = ActivityFilter(bundleId: "com.example.ci", limit: 7)
            var listed: [ActivityID] = []
            while true {
                let page = try await fixture.engine.activities(filter)
                #expect(page.items.count <= 7)
                listed += page.items.map(\.id)
                guard let next = page.next else { break }
                filter.after = try PageCursor.place(ActivityPlace.self, from: next)
            }
            #expect(Set(listed) == Set(seeded.filter { $0.bundleId == "com.example.ci" }.map(\.id)))
            #expect(listed.count == 150)

            // q: the first characters of an id, in either case, or of a key.
            let one = seeded[42]
            let byId = try await fixture.engine.activities(ActivityFilter(query: String(one.id.prefix(8)).lowercased()))
            #expect(byId.items.map(\.id).contains(one.id))
            #expect(byId.items.allSatisfy { $0.id.hasPrefix(one.id.prefix(8)) })
            let byKey = try await fixture.engine.activities(ActivityFilter(query: "ride-29", limit: 1_000))
            #expect(Set(byKey.items.compactMap(\.key)) == ["ride-29", "ride-290", "ride-291", "ride-292", "ride-293", "ride-294", "ride-295", "ride-296", "ride-297", "ride-298", "ride-299"])

            // updatedSince: only what changed at or after the moment.
            let later = try await fixture.start(ride(3), at: t0.addingTimeInterval(600))
            let since = try await fixture.engine.activities(ActivityFilter(updatedSince: t0.addingTimeInterval(300)))
            #expect(since.items.map(\.id) == [later.id])
            #expect(try await fixture.engine.activities(ActivityFilter(updatedSince: t0.addingTimeInterval(3_600))).items.isEmpty)
        }
    }

    @Test func aCursorThisServerDidNotGiveIsRefused() throws {
        for cursor in ["", "garbage", "AQ", PageCursor.cursor(for: ["not", "a", "place"]), String(repeating: "A", count: 5_000)] {
            #expect(throws: IsletError.self) { try PageCursor.place(ActivityPlace.self, from: cursor) }
        }
        let place = ActivityPlace(score: -0.5, start: 1_795_000_000.123456, id: "A1B2")
        #expect(try PageCursor.place(ActivityPlace.self, from: PageCursor.cursor(for: place)) == place)
        #expect(throws: IsletError.self) { try PageRequest<ActivityPlace>(limit: "0", cursor: nil) }
        #expect(throws: IsletError.self) { try PageRequest<ActivityPlace>(limit: "1001", cursor: nil) }
        #expect(try PageRequest<ActivityPlace>(limit: nil, cursor: nil).limit == 100)
    }

    /// A late page must seek, not count: every listing query reads an index in the listing's
    /// order (no temporary sort of every activity), and the cursor's place is a range on it.
    @Test func aPageSeeksOnTheListingIndex() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("islet-plan-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try SQLiteStore(path: directory.appendingPathComponent("islet.sqlite").path, durability: .normal)
        let after = ActivityPlace(score: 0, start: 0, id: "")
        let listings = [
            (SQLQueries.listing(ActivityFilter(after: after), dialect: .sqlite), "activity_listing"),
            (SQLQueries.listing(ActivityFilter(bundleId: "com.example.ci", after: after), dialect: .sqlite), "activity_app_listing"),
        ]
        for ((sql, values), index) in listings {
            let sql = SQLDialect.sqlitePlaceholders(sql), arguments = SQLiteSession.arguments(values)
            let plan = try await store.pool.read { db in
                try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql, arguments: arguments).map { $0["detail"] as String }
            }
            #expect(plan.contains { $0.hasPrefix("SEARCH activity USING INDEX \(index)") }, "\(plan)")
            #expect(!plan.contains { $0.contains("TEMP B-TREE") }, "\(plan)")
        }
    }
}
