import Foundation
import GRDB
import IsletCore
@testable import IsletStore
import Synchronization
import Testing

let t0 = Date(timeIntervalSince1970: 1_700_000_000)
let hour: TimeInterval = 3600
func at(_ seconds: TimeInterval) -> Date { t0.addingTimeInterval(seconds) }

/// Collects the events a store hands to its subscribers.
final class EventSink: Sendable {
    let events = Mutex<[EncodedEvent]>([])
}

/// A store in a fresh temporary directory, with one app and the default device.
final class StoreFixture {
    let directory: URL
    let sink = EventSink()
    private(set) var store: SQLiteStore!

    init(rules: LifecycleRules = LifecycleRules(), apps: [String] = ["com.example.bike"]) async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("islet-store-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try open(rules: rules)
        try await store.ensureDefaultDevice(now: t0)
        for app in apps {
            try await store.createApp(App(bundleId: app, name: app, createdAt: t0), keyHash: "hash-\(app)")
        }
    }

    var path: String { directory.appendingPathComponent("islet.sqlite").path }

    /// Opens the store (again), as a restarted server would.
    func open(rules: LifecycleRules = LifecycleRules()) throws {
        store = nil
        let sink = self.sink
        store = try SQLiteStore(path: path, rules: rules) { events in
            sink.events.withLock { $0 += events }
        }
    }

    deinit {
        try? FileManager.default.removeItem(at: directory)
    }
}

func ride(_ speed: Int64, staleDate: Date? = nil, relevance: Double = 0, device: DeviceID = .defaultDevice)
    -> ActivityRequest
{
    ActivityRequest(
        attributesType: "RideAttributes", attributes: ["route": "Loop"],
        content: ActivityContent(state: ["speed": .integer(speed)], staleDate: staleDate, relevanceScore: relevance),
        deviceId: device
    )
}

func reason(_ body: () async throws -> Void) async -> ErrorReason? {
    do {
        try await body()
        return nil
    } catch let error as IsletError {
        return error.reason
    } catch {
        return nil
    }
}

@Suite("SQLite store")
struct StoreTests {
    @Test func startedActivityAndItsEventsAreStored() async throws {
        let fixture = try await StoreFixture()
        let outcome = try await fixture.store.request(ride(10), bundleId: "com.example.bike", now: t0)
        #expect(outcome.created)
        let stored = try await fixture.store.activity(outcome.activity.id, owner: nil)
        #expect(stored == outcome.activity)
        let history = try await fixture.store.history(of: stored.id, owner: nil)
        #expect(history.map(\.type) == [.started])
    }

    @Test func eventIdsIncreaseAndReachTheSinkInCommitOrder() async throws {
        let fixture = try await StoreFixture()
        let store = fixture.store!
        let id = try await store.request(ride(0), bundleId: "com.example.bike", now: t0).activity.id
        try await withThrowingTaskGroup(of: Void.self) { group in
            for speed in 1...50 {
                group.addTask {
                    _ = try await store.apply(
                        .update(ContentUpdate(content: ActivityContent(state: ["speed": .integer(Int64(speed))]))),
                        to: id, owner: nil, now: at(Double(speed))
                    )
                }
            }
            try await group.waitForAll()
        }
        let ids = fixture.sink.events.withLock { $0.map(\.id) }
        #expect(ids == Array(1...ids.count).map(EventID.init))
        #expect(ids.count == 51)
        #expect(try await fixture.store.lastEventID() == 51)
    }

    @Test func anotherAppsActivityIsNotFound() async throws {
        let fixture = try await StoreFixture(apps: ["com.example.bike", "com.example.ci"])
        let id = try await fixture.store.request(ride(1), bundleId: "com.example.bike", now: t0).activity.id
        #expect(await reason { _ = try await fixture.store.activity(id, owner: "com.example.ci") } == .activityNotFound)
        #expect(await reason {
            _ = try await fixture.store.apply(.end(EndRequest()), to: id, owner: "com.example.ci", now: t0)
        } == .activityNotFound)
        #expect(try await fixture.store.activity(id, owner: nil).state == .active)
    }

    @Test func limitsCountOnlyLiveActivitiesOfTheAppOnTheDevice() async throws {
        var rules = LifecycleRules()
        rules.maxActivitiesPerApp = 2
        rules.maxActivitiesPerDevice = 3
        let fixture = try await StoreFixture(rules: rules, apps: ["com.example.bike", "com.example.ci"])
        try await fixture.store.createDevice(Device(id: "phone-2", name: "Phone 2", createdAt: t0))
        let store = fixture.store!
        let first = try await store.request(ride(1), bundleId: "com.example.bike", now: t0).activity
        _ = try await store.request(ride(2), bundleId: "com.example.bike", now: t0)
        #expect(await reason { _ = try await store.request(ride(3), bundleId: "com.example.bike", now: t0) } == .targetMaximumExceeded)
        // Another device has its own count.
        _ = try await store.request(ride(3, device: "phone-2"), bundleId: "com.example.bike", now: t0)
        // An ended activity no longer counts.
        _ = try await store.apply(.end(EndRequest()), to: first.id, owner: nil, now: at(1))
        _ = try await store.request(ride(4), bundleId: "com.example.bike", now: at(2))
        _ = try await store.request(ride(5), bundleId: "com.example.ci", now: at(2))
        #expect(await reason { _ = try await store.request(ride(6), bundleId: "com.example.ci", now: at(2)) } == .globalMaximumExceeded)
    }

    @Test func unknownAppAndDeviceAreRefused() async throws {
        let fixture = try await StoreFixture()
        #expect(await reason { _ = try await fixture.store.request(ride(1), bundleId: "com.example.none", now: t0) } == .appNotFound)
        #expect(await reason {
            _ = try await fixture.store.request(ride(1, device: "nowhere"), bundleId: "com.example.bike", now: t0)
        } == .deviceNotFound)
    }

    @Test func turningAppOffEndsItsActivitiesOnThatDeviceAndRefusesNewOnes() async throws {
        let fixture = try await StoreFixture(apps: ["com.example.bike", "com.example.ci"])
        let store = fixture.store!
        let bike = try await store.request(ride(1), bundleId: "com.example.bike", now: t0).activity
        let ci = try await store.request(ride(1), bundleId: "com.example.ci", now: t0).activity
        let settings = try await store.updateSettings(
            deviceId: .defaultDevice, bundleId: "com.example.bike", activitiesEnabled: false, frequentUpdates: nil, now: at(5)
        )
        #expect(!settings.activitiesEnabled)
        #expect(try await store.activity(bike.id, owner: nil).state == .dismissed)
        #expect(try await store.activity(ci.id, owner: nil).state == .active)
        #expect(await reason { _ = try await store.request(ride(2), bundleId: "com.example.bike", now: at(6)) } == .denied)
        let types = fixture.sink.events.withLock { $0.map(\.type) }
        #expect(types.suffix(3) == [.settingsChanged, .stateChanged, .stateChanged])
        // Turning it back on allows new activities again.
        _ = try await store.updateSettings(
            deviceId: .defaultDevice, bundleId: "com.example.bike", activitiesEnabled: true, frequentUpdates: true, now: at(7)
        )
        _ = try await store.request(ride(3), bundleId: "com.example.bike", now: at(8))
        #expect(try await store.settings(deviceId: .defaultDevice, bundleId: "com.example.bike").first?.frequentUpdates == true)
    }

    @Test func unchangedSettingsRecordNothing() async throws {
        let fixture = try await StoreFixture()
        _ = try await fixture.store.updateSettings(
            deviceId: .defaultDevice, bundleId: "com.example.bike", activitiesEnabled: true, frequentUpdates: false, now: t0
        )
        #expect(fixture.sink.events.withLock { $0.isEmpty })
    }

    @Test func deadlinesFireAfterRestartAtTheirOwnTimes() async throws {
        let fixture = try await StoreFixture()
        let staleSoon = try await fixture.store.request(ride(1, staleDate: at(60)), bundleId: "com.example.bike", now: t0)
            .activity
        var scheduled = ride(2)
        scheduled.start = at(2 * hour)
        scheduled.alert = Alert(title: "Ride", body: "Starting")
        let pending = try await fixture.store.request(scheduled, bundleId: "com.example.bike", now: t0).activity
        let ended = try await fixture.store.request(ride(3), bundleId: "com.example.bike", now: t0).activity
        _ = try await fixture.store.apply(.end(EndRequest(dismissalPolicy: .after(at(hour)))), to: ended.id, owner: nil, now: at(10))
        #expect(try await fixture.store.nextDeadline() == at(60))

        // The server stops; nine hours pass; it starts again.
        try fixture.open()
        let fired = try await fixture.store.fireDueDeadlines(now: at(9 * hour))
        #expect(fired == 3)

        let stale = try await fixture.store.activity(staleSoon.id, owner: nil)
        #expect(stale.state == .ended)
        #expect(stale.endedAt == at(8 * hour))
        #expect(stale.dismissAt == at(12 * hour))
        let started = try await fixture.store.activity(pending.id, owner: nil)
        #expect(started.state == .active)
        #expect(started.startedAt == at(2 * hour))
        #expect(try await fixture.store.activity(ended.id, owner: nil).state == .dismissed)

        let changes = try await fixture.store.history(of: staleSoon.id, owner: nil)
            .filter { $0.type == .stateChanged }.map { try $0.decoded().data }
        #expect(changes.map { $0["to"] } == ["stale", "ended"])
        #expect(changes.map { $0["at"] } == [.integer(Int64(at(60).timeIntervalSince1970)), .integer(Int64(at(8 * hour).timeIntervalSince1970))])
        #expect(try await fixture.store.nextDeadline() == at(10 * hour))
        #expect(try await fixture.store.fireDueDeadlines(now: at(9 * hour)) == 0)
    }

    @Test func listingOrderIsTheDevicesRelevanceOrder() async throws {
        var rules = LifecycleRules()
        rules.maxActivitiesPerApp = 100
        rules.maxActivitiesPerDevice = 100
        let fixture = try await StoreFixture(rules: rules)
        var generator = SystemRandomNumberGenerator()
        for index in 0..<30 {
            let score = Double([0, 10, 50, 100].randomElement(using: &generator)!)
            _ = try await fixture.store.request(ride(1, relevance: score), bundleId: "com.example.bike", now: at(Double(index % 7)))
        }
        let listed = try await fixture.store.activities(ActivityFilter())
        #expect(listed.map(\.id) == listed.sortedByRelevance().map(\.id))
        let firstTen = try await fixture.store.activities(ActivityFilter(limit: 10))
        #expect(firstTen.map(\.id) == Array(listed.prefix(10)).map(\.id))
    }

    @Test func listingFilters() async throws {
        let fixture = try await StoreFixture(apps: ["com.example.bike", "com.example.ci"])
        let store = fixture.store!
        let bike = try await store.request(ride(1), bundleId: "com.example.bike", now: t0).activity
        var build = ride(1)
        build.attributesType = "BuildAttributes"
        let ci = try await store.request(build, bundleId: "com.example.ci", now: t0).activity
        _ = try await store.apply(.end(EndRequest()), to: ci.id, owner: nil, now: at(1))
        #expect(try await store.activities(ActivityFilter(bundleId: "com.example.bike")).map(\.id) == [bike.id])
        #expect(try await store.activities(ActivityFilter(states: [.ended])).map(\.id) == [ci.id])
        #expect(try await store.activities(ActivityFilter(attributesType: "BuildAttributes")).map(\.id) == [ci.id])
        #expect(try await store.activities(ActivityFilter(deviceId: "other")).isEmpty)
    }

    @Test func startOrUpdateByKeyStartsThenUpdatesThenEnds() async throws {
        let fixture = try await StoreFixture()
        let store = fixture.store!
        let first = try await store.startOrUpdate(
            key: "job-1", request: ride(1), timestamp: nil, end: nil, bundleId: "com.example.bike", now: t0
        )
        #expect(first.created)
        let second = try await store.startOrUpdate(
            key: "job-1", request: ride(2), timestamp: nil, end: nil, bundleId: "com.example.bike", now: at(1)
        )
        #expect(!second.created)
        #expect(second.activity.id == first.activity.id)
        #expect(second.activity.content.state == ["speed": 2])
        let last = try await store.startOrUpdate(
            key: "job-1", request: ride(3), timestamp: nil, end: .immediate, bundleId: "com.example.bike", now: at(2)
        )
        #expect(last.activity.id == first.activity.id)
        #expect(last.activity.state == .dismissed)
        #expect(last.activity.content.state == ["speed": 3])
        // The key is free again: the next call starts a new activity.
        let rerun = try await store.startOrUpdate(
            key: "job-1", request: ride(4), timestamp: nil, end: nil, bundleId: "com.example.bike", now: at(3)
        )
        #expect(rerun.created)
        #expect(rerun.activity.id != first.activity.id)
        #expect(rerun.activity.key == "job-1")
    }

    @Test func ignoredUpdateIsRecordedAndChangesNothingElse() async throws {
        let fixture = try await StoreFixture()
        let store = fixture.store!
        let id = try await store.request(ride(1), bundleId: "com.example.bike", now: t0).activity.id
        _ = try await store.apply(.update(ContentUpdate(content: ActivityContent(state: ["speed": 5]), timestamp: at(100))), to: id, owner: nil, now: at(100))
        let ignored = try await store.apply(
            .update(ContentUpdate(content: ActivityContent(state: ["speed": 3]), timestamp: at(50))), to: id, owner: nil,
            now: at(101)
        )
        #expect(ignored.transition.ignored == .olderTimestamp)
        #expect(try await store.activity(id, owner: nil).content.state == ["speed": 5])
        let last = try await store.history(of: id, owner: nil).last!.decoded()
        #expect(last.type == .updateIgnored)
        #expect(last.data["reason"] == "olderTimestamp")
    }

    @Test func refusedChangeRollsBackEverything() async throws {
        let fixture = try await StoreFixture()
        let id = try await fixture.store.request(ride(1), bundleId: "com.example.bike", now: t0).activity.id
        let big = ActivityContent(state: ["note": .string(String(repeating: "x", count: 5000))])
        #expect(await reason { _ = try await fixture.store.apply(.update(ContentUpdate(content: big)), to: id, owner: nil, now: at(1)) } == .attributesTooLarge)
        #expect(try await fixture.store.history(of: id, owner: nil).count == 1)
        #expect(try await fixture.store.lastEventID() == 1)
    }

    @Test func changesArrivingTogetherShareATransactionAndARefusalUndoesOnlyItsOwn() async throws {
        let fixture = try await StoreFixture()
        let store = fixture.store!
        let id = try await store.request(ride(0), bundleId: "com.example.bike", now: t0).activity.id
        let transactionsBefore = store.groupCommit.transactions
        let big = String(repeating: "x", count: 5000)
        // Every third change is refused (its state is too large); the others must all land.
        let refused = try await withThrowingTaskGroup(of: ErrorReason?.self) { group in
            for n in 1...60 {
                group.addTask {
                    let state: JSONValue = n % 3 == 0 ? ["note": .string(big)] : ["speed": .integer(Int64(n))]
                    return await reason {
                        _ = try await store.apply(.update(ContentUpdate(content: ActivityContent(state: state))), to: id, owner: nil, now: at(Double(n)))
                    }
                }
            }
            return try await group.reduce(into: [ErrorReason?]()) { $0.append($1) }
        }
        #expect(refused.filter { $0 == .attributesTooLarge }.count == 20)
        #expect(refused.filter { $0 == nil }.count == 40)
        let history = try await store.history(of: id, owner: nil)
        #expect(history.count == 41)
        #expect(history.map(\.id) == Array(1...41).map(EventID.init))
        #expect(fixture.sink.events.withLock { $0.map(\.id) } == history.map(\.id))
        #expect(store.groupCommit.transactions - transactionsBefore < 60)
    }

    @Test func startingCountsOnlyTheDevicesActivitiesThroughAnIndex() async throws {
        let fixture = try await StoreFixture()
        // What SQLite would do for the counts a start makes: each must search one index by the
        // device, never scan the app's activities (that made starts slower as the fleet grew).
        let plans = try await fixture.store.pool.read { db in
            try [
                "SELECT COUNT(*) FROM activity WHERE deviceId = 'd' AND bundleId = 'b' AND state IN ('pending', 'active', 'stale')",
                "SELECT COUNT(*) FROM activity WHERE deviceId = 'd' AND state IN ('pending', 'active', 'stale')",
            ].map { sql in try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql).map { $0["detail"] as String }.joined(separator: "; ") }
        }
        for plan in plans {
            #expect(plan.contains("USING COVERING INDEX activity_device_app_state (deviceId=?"), "\(plan)")
        }
    }

    @Test func eventsAfterAnIdPassTheFilter() async throws {
        let fixture = try await StoreFixture(apps: ["com.example.bike", "com.example.ci"])
        let bike = try await fixture.store.request(ride(1), bundleId: "com.example.bike", now: t0).activity.id
        _ = try await fixture.store.request(ride(1), bundleId: "com.example.ci", now: t0)
        _ = try await fixture.store.apply(.end(EndRequest()), to: bike, owner: nil, now: at(1))
        let all = try await fixture.store.events(after: 0, filter: EventFilter(), limit: 100)
        #expect(all.map(\.id) == [1, 2, 3])
        #expect(try await fixture.store.events(after: 1, filter: EventFilter(bundleId: "com.example.bike"), limit: 100).map(\.id) == [3])
        #expect(try await fixture.store.events(after: 0, filter: EventFilter(activityId: bike), limit: 1).map(\.id) == [1])
    }

    @Test func purgeDeletesOldDismissedActivitiesAndEvents() async throws {
        let fixture = try await StoreFixture()
        let old = try await fixture.store.request(ride(1), bundleId: "com.example.bike", now: t0).activity.id
        _ = try await fixture.store.apply(.end(EndRequest(dismissalPolicy: .immediate)), to: old, owner: nil, now: at(1))
        var pushed = ride(3)
        pushed.pushType = .token
        let withToken = try await fixture.store.request(pushed, bundleId: "com.example.bike", now: at(2)).activity
        let second = try await fixture.store.rotateToken(of: withToken.id, owner: nil, now: at(3)).activity.pushToken!
        let rotatedLater = try await fixture.store.rotateToken(of: withToken.id, owner: nil, now: at(8 * 86_400)).activity
        let live = try await fixture.store.request(ride(2), bundleId: "com.example.bike", now: at(10 * 86_400)).activity.id
        let purged = try await fixture.store.purge(before: at(7 * 86_400))
        #expect(purged.activities == 1)
        #expect(purged.events == 6)
        #expect(purged.tokens == 1)
        // The token retired before the cutoff is forgotten; the one retired after it still answers 410.
        #expect(try await fixture.store.lookup(token: withToken.pushToken!) == .unknown)
        #expect(try await fixture.store.lookup(token: second) == .retired(at: at(8 * 86_400), reason: "rotated", bundleId: "com.example.bike"))
        #expect(try await fixture.store.lookup(token: rotatedLater.pushToken!) == .activity(withToken.id, bundleId: "com.example.bike"))
        #expect(await reason { _ = try await fixture.store.activity(old, owner: nil) } == .activityNotFound)
        #expect(try await fixture.store.activity(live, owner: nil).state == .active)
    }

    @Test func appsAndKeys() async throws {
        let fixture = try await StoreFixture()
        #expect(await reason {
            try await fixture.store.createApp(App(bundleId: "com.example.bike", name: "", createdAt: t0), keyHash: "x")
        } == .appAlreadyExists)
        #expect(try await fixture.store.keyOwner(hash: "hash-com.example.bike") == .app("com.example.bike"))
        try await fixture.store.replaceAdminKey(hash: "admin-1", now: t0)
        try await fixture.store.replaceAdminKey(hash: "admin-2", now: t0)
        #expect(try await fixture.store.keyOwner(hash: "admin-1") == nil)
        #expect(try await fixture.store.keyOwner(hash: "admin-2") == .admin)
        #expect(try await fixture.store.apps().map(\.bundleId) == ["com.example.bike"])
    }
}
