import Foundation
import GRDB
import IsletCore
@testable import IsletEngine
@testable import IsletStore
import IsletTestSupport
import Testing

/// The engine's use cases, without HTTP, on a real SQLite file: one test per rule.
@Suite("Use cases", .hangDetector)
struct UseCaseTests {
    @Test(arguments: StoreKind.available) func startedActivityAndItsEventsAreStored(store: StoreKind) async throws {
        try await EngineFixture.with(store) { fixture in
            let outcome = try await fixture.engine.start(ride(10), bundleId: "com.example.bike")
            #expect(outcome.created)
            let stored = try await fixture.engine.activity(outcome.activity.id, owner: nil)
            #expect(stored == outcome.activity)
            let history = try await fixture.engine.history(of: stored.id, owner: nil)
            #expect(history.map(\.type) == [.started])
        }
    }

    @Test(arguments: StoreKind.available) func eventIdsIncreaseAndArePublishedInCommitOrder(store: StoreKind) async throws {
        try await EngineFixture.with(store) { fixture in
            let engine = fixture.engine
            let id = try await fixture.start(ride(0)).id
            try await withThrowingTaskGroup(of: Void.self) { group in
                for speed in 1...50 {
                    group.addTask { _ = try await engine.apply(update(["speed": .integer(Int64(speed))]), to: id, owner: nil) }
                }
                try await group.waitForAll()
            }
            let ids = fixture.recorded.events.map(\.id)
            #expect(ids == Array(1...ids.count).map(EventID.init))
            #expect(ids.count == 51)
            #expect(try await engine.lastEventID() == 51)
        }
    }

    @Test(arguments: StoreKind.available) func anAnswerMeansTheChangeIsPublished(store: StoreKind) async throws {
        try await EngineFixture.with(store) { fixture in
            let subscription = fixture.engine.bus.subscribe(filter: EventFilter())
            let id = try await fixture.start(ride(0)).id
            // Nothing awaited between the answer and the look: the fan-out ran before the answer.
            #expect(fixture.recorded.events.map(\.activityId) == [id])
            #expect(subscription.queuedCount == 1)
        }
    }

    @Test(arguments: StoreKind.available) func anotherAppsActivityIsNotFound(store: StoreKind) async throws {
        try await EngineFixture.with(store, apps: ["com.example.bike", "com.example.ci"]) { fixture in
            let id = try await fixture.start(ride(1)).id
            #expect(await reason { _ = try await fixture.engine.activity(id, owner: "com.example.ci") } == .activityNotFound)
            #expect(await reason { _ = try await fixture.apply(.end(EndRequest()), to: id, owner: "com.example.ci", at: t0) } == .activityNotFound)
            #expect(await reason { _ = try await fixture.engine.history(of: id, owner: "com.example.ci") } == .activityNotFound)
            #expect(try await fixture.engine.activity(id, owner: nil).state == .active)
        }
    }

    @Test(arguments: StoreKind.available) func limitsCountOnlyLiveActivitiesOfTheAppOnTheDevice(store: StoreKind) async throws {
        var rules = LifecycleRules()
        rules.maxActivitiesPerApp = 2
        rules.maxActivitiesPerDevice = 3
        try await EngineFixture.with(store, rules: rules, apps: ["com.example.bike", "com.example.ci"]) { fixture in
            try await fixture.engine.createDevice(Device(id: "phone-2", name: "Phone 2", createdAt: t0))
            let first = try await fixture.start(ride(1))
            try await fixture.start(ride(2))
            #expect(await reason { try await fixture.start(ride(3)) } == .targetMaximumExceeded)
            // Another device has its own count.
            try await fixture.start(ride(3, device: "phone-2"))
            // An ended activity no longer counts.
            try await fixture.apply(.end(EndRequest()), to: first.id, at: at(1))
            try await fixture.start(ride(4), at: at(2))
            try await fixture.start(ride(5), bundleId: "com.example.ci", at: at(2))
            #expect(await reason { try await fixture.start(ride(6), bundleId: "com.example.ci", at: at(2)) } == .globalMaximumExceeded)
        }
    }

    @Test(arguments: StoreKind.available) func unknownAppAndDeviceAreRefused(store: StoreKind) async throws {
        try await EngineFixture.with(store) { fixture in
            #expect(await reason { try await fixture.start(ride(1), bundleId: "com.example.none") } == .appNotFound)
            #expect(await reason { try await fixture.start(ride(1, device: "nowhere")) } == .deviceNotFound)
        }
    }

    @Test(arguments: StoreKind.available) func turningAppOffEndsItsActivitiesOnThatDeviceAndRefusesNewOnes(store: StoreKind) async throws {
        try await EngineFixture.with(store, apps: ["com.example.bike", "com.example.ci"]) { fixture in
            let engine = fixture.engine
            let bike = try await fixture.start(ride(1))
            let ci = try await fixture.start(ride(1), bundleId: "com.example.ci")
            fixture.clock.set(at(5))
            let settings = try await engine.updateSettings(
                deviceId: .defaultDevice, bundleId: "com.example.bike", activitiesEnabled: false, frequentUpdates: nil
            )
            #expect(!settings.activitiesEnabled)
            #expect(try await engine.activity(bike.id, owner: nil).state == .dismissed)
            #expect(try await engine.activity(ci.id, owner: nil).state == .active)
            #expect(await reason { try await fixture.start(ride(2), at: at(6)) } == .denied)
            #expect(fixture.recorded.events.map(\.type).suffix(3) == [.settingsChanged, .stateChanged, .stateChanged])
            // Turning it back on allows new activities again.
            fixture.clock.set(at(7))
            _ = try await engine.updateSettings(
                deviceId: .defaultDevice, bundleId: "com.example.bike", activitiesEnabled: true, frequentUpdates: true
            )
            try await fixture.start(ride(3), at: at(8))
            #expect(try await engine.settings(deviceId: .defaultDevice, bundleId: "com.example.bike").first?.frequentUpdates == true)
        }
    }

    @Test(arguments: StoreKind.available) func unchangedSettingsRecordNothing(store: StoreKind) async throws {
        try await EngineFixture.with(store) { fixture in
            _ = try await fixture.engine.updateSettings(
                deviceId: .defaultDevice, bundleId: "com.example.bike", activitiesEnabled: true, frequentUpdates: false
            )
            #expect(fixture.recorded.events.isEmpty)
        }
    }

    @Test(arguments: StoreKind.available) func deadlinesFireAfterRestartAtTheirOwnTimes(store: StoreKind) async throws {
        try await EngineFixture.with(store) { fixture in
            let staleSoon = try await fixture.start(ride(1, staleDate: at(60)))
            var scheduled = ride(2)
            scheduled.start = at(2 * hour)
            scheduled.alert = Alert(title: "Ride", body: "Starting")
            let pending = try await fixture.start(scheduled)
            let ended = try await fixture.start(ride(3))
            try await fixture.apply(.end(EndRequest(dismissalPolicy: .after(at(hour)))), to: ended.id, at: at(10))
            #expect(try await fixture.engine.nextDeadline() == at(60))

            // The server stops; nine hours pass; it starts again.
            try await fixture.stop()
            fixture.clock.set(at(9 * hour))
            try await fixture.start()
            let engine = fixture.engine
            #expect(try await engine.fireDueDeadlines() == 3)

            let stale = try await engine.activity(staleSoon.id, owner: nil)
            #expect(stale.state == .ended)
            #expect(stale.endedAt == at(8 * hour))
            #expect(stale.dismissAt == at(12 * hour))
            let started = try await engine.activity(pending.id, owner: nil)
            #expect(started.state == .active)
            #expect(started.startedAt == at(2 * hour))
            #expect(try await engine.activity(ended.id, owner: nil).state == .dismissed)

            let changes = try await engine.history(of: staleSoon.id, owner: nil)
                .filter { $0.type == .stateChanged }.map { try $0.decoded().data }
            #expect(changes.map { $0["to"] } == ["stale", "ended"])
            #expect(changes.map { $0["at"] } == [.integer(Int64(at(60).timeIntervalSince1970)), .integer(Int64(at(8 * hour).timeIntervalSince1970))])
            #expect(try await engine.nextDeadline() == at(10 * hour))
            #expect(try await engine.fireDueDeadlines() == 0)
            #expect(fixture.recorded.effects.deadlinesFired == 3)
        }
    }

    @Test(arguments: StoreKind.available) func theSchedulerFiresADeadlineACommitBringsNearer(store: StoreKind) async throws {
        try await EngineFixture.with(store, timers: true) { fixture in
            let id = try await fixture.start(ride(1, staleDate: at(600))).id
            let stale = fixture.engine.bus.subscribe(filter: EventFilter(activityId: id))
            // The scheduler sleeps towards 8 h; the update's nearer stale date must wake it.
            try await fixture.apply(.update(ContentUpdate(content: ActivityContent(state: ["speed": 2], staleDate: at(60)))), to: id, at: at(1))
            fixture.clock.set(at(61))
            try await within {
                var types: [EventType] = []
                while !types.contains(.stateChanged) {
                    switch await stale.next() {
                    case .events(let events): types += events.map(\.type)
                    case .idle: continue  // the keep-alive beat, which the clock's move also passed
                    case .finished: return
                    }
                }
            }
            #expect(try await fixture.engine.activity(id, owner: nil).state == .stale)
        }
    }

    @Test(arguments: StoreKind.available) func listingOrderIsTheDevicesRelevanceOrder(store: StoreKind) async throws {
        var rules = LifecycleRules()
        rules.maxActivitiesPerApp = 100
        rules.maxActivitiesPerDevice = 100
        try await EngineFixture.with(store, rules: rules) { fixture in
            var generator = SystemRandomNumberGenerator()
            for index in 0..<30 {
                let score = Double([0, 10, 50, 100].randomElement(using: &generator)!)
                try await fixture.start(ride(1, relevance: score), at: at(Double(index % 7)))
            }
            let listed = try await fixture.engine.activities(ActivityFilter()).items
            #expect(listed.map(\.id) == listed.sortedByRelevance().map(\.id))
            let firstTen = try await fixture.engine.activities(ActivityFilter(limit: 10)).items
            #expect(firstTen.map(\.id) == Array(listed.prefix(10)).map(\.id))
        }
    }

    @Test(arguments: StoreKind.available) func listingFilters(store: StoreKind) async throws {
        try await EngineFixture.with(store, apps: ["com.example.bike", "com.example.ci"]) { fixture in
            let engine = fixture.engine
            let bike = try await fixture.start(ride(1))
            var build = ride(1)
            build.attributesType = "BuildAttributes"
            let ci = try await fixture.start(build, bundleId: "com.example.ci")
            try await fixture.apply(.end(EndRequest()), to: ci.id, at: at(1))
            #expect(try await engine.activities(ActivityFilter(bundleId: "com.example.bike")).items.map(\.id) == [bike.id])
            #expect(try await engine.activities(ActivityFilter(states: [.ended])).items.map(\.id) == [ci.id])
            #expect(try await engine.activities(ActivityFilter(attributesType: "BuildAttributes")).items.map(\.id) == [ci.id])
            #expect(try await engine.activities(ActivityFilter(deviceId: "other")).items.isEmpty)
        }
    }

    @Test(arguments: StoreKind.available) func startOrUpdateByKeyStartsThenUpdatesThenEnds(store: StoreKind) async throws {
        try await EngineFixture.with(store) { fixture in
            let engine = fixture.engine
            func step(_ speed: Int64, end: DismissalPolicy? = nil, at time: Date) async throws -> Outcome {
                fixture.clock.set(time)
                return try await engine.startOrUpdate(key: "job-1", request: ride(speed), timestamp: nil, end: end, bundleId: "com.example.bike")
            }
            let first = try await step(1, at: t0)
            #expect(first.created)
            let second = try await step(2, at: at(1))
            #expect(!second.created)
            #expect(second.activity.id == first.activity.id)
            #expect(second.activity.content.state == ["speed": 2])
            let last = try await step(3, end: .immediate, at: at(2))
            #expect(last.activity.id == first.activity.id)
            #expect(last.activity.state == .dismissed)
            #expect(last.activity.content.state == ["speed": 3])
            // The key is free again: the next call starts a new activity.
            let rerun = try await step(4, at: at(3))
            #expect(rerun.created)
            #expect(rerun.activity.id != first.activity.id)
            #expect(rerun.activity.key == "job-1")
        }
    }

    @Test(arguments: StoreKind.available) func ignoredUpdateIsRecordedAndChangesNothingElse(store: StoreKind) async throws {
        try await EngineFixture.with(store) { fixture in
            let id = try await fixture.start(ride(1)).id
            try await fixture.apply(update(["speed": 5], timestamp: at(100)), to: id, at: at(100))
            let ignored = try await fixture.apply(update(["speed": 3], timestamp: at(50)), to: id, at: at(101))
            #expect(ignored.transition.ignored == .olderTimestamp)
            #expect(try await fixture.engine.activity(id, owner: nil).content.state == ["speed": 5])
            let last = try await fixture.engine.history(of: id, owner: nil).last!.decoded()
            #expect(last.type == .updateIgnored)
            #expect(last.data["reason"] == "olderTimestamp")
            #expect(fixture.recorded.effects.updatesIgnored == [.olderTimestamp: 1])
            #expect(fixture.recorded.effects.updatesApplied == 1)
        }
    }

    @Test(arguments: StoreKind.available) func refusedChangeRollsBackEverything(store: StoreKind) async throws {
        try await EngineFixture.with(store) { fixture in
            let id = try await fixture.start(ride(1)).id
            let big = ActivityContent(state: ["note": .string(String(repeating: "x", count: 5000))])
            #expect(await reason { try await fixture.apply(.update(ContentUpdate(content: big)), to: id, at: at(1)) } == .attributesTooLarge)
            #expect(try await fixture.engine.history(of: id, owner: nil).count == 1)
            #expect(try await fixture.engine.lastEventID() == 1)
        }
    }

    @Test func changesArrivingTogetherShareATransactionAndARefusalUndoesOnlyItsOwn() async throws {
        try await EngineFixture.with { fixture in
            let engine = fixture.engine
            let id = try await fixture.start(ride(0)).id
            let transactionsBefore = fixture.sqlite.groupCommit.transactions
            let big = String(repeating: "x", count: 5000)
            // Every third change is refused (its state is too large); the others must all land.
            let refused = try await withThrowingTaskGroup(of: ErrorReason?.self) { group in
                for n in 1...60 {
                    group.addTask {
                        let state: JSONValue = n % 3 == 0 ? ["note": .string(big)] : ["speed": .integer(Int64(n))]
                        return await reason { _ = try await engine.apply(update(state), to: id, owner: nil) }
                    }
                }
                return try await group.reduce(into: [ErrorReason?]()) { $0.append($1) }
            }
            #expect(refused.filter { $0 == .attributesTooLarge }.count == 20)
            #expect(refused.filter { $0 == nil }.count == 40)
            let history = try await engine.history(of: id, owner: nil)
            #expect(history.count == 41)
            #expect(history.map(\.id) == Array(1...41).map(EventID.init))
            #expect(fixture.recorded.events.map(\.id) == history.map(\.id))
            #expect(fixture.sqlite.groupCommit.transactions - transactionsBefore < 60)
        }
    }

    @Test func startingCountsOnlyTheDevicesActivitiesThroughAnIndex() async throws {
        try await EngineFixture.with { fixture in
            // What SQLite would do for the counts a start makes: each must search one index by the
            // device, never scan the app's activities (that made starts slower as the fleet grew).
            let plans = try await fixture.sqlite.pool.read { db in
                try [
                    "SELECT COUNT(*) FROM activity WHERE deviceId = 'd' AND bundleId = 'b' AND state IN ('pending', 'active', 'stale')",
                    "SELECT COUNT(*) FROM activity WHERE deviceId = 'd' AND state IN ('pending', 'active', 'stale')",
                ].map { sql in try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql).map { $0["detail"] as String }.joined(separator: "; ") }
            }
            for plan in plans {
                #expect(plan.contains("USING COVERING INDEX activity_device_app_state (deviceId=?"), "\(plan)")
            }
        }
    }

    @Test(arguments: StoreKind.available) func eventsAfterAnIdPassTheFilter(store: StoreKind) async throws {
        try await EngineFixture.with(store, apps: ["com.example.bike", "com.example.ci"]) { fixture in
            let engine = fixture.engine
            let bike = try await fixture.start(ride(1)).id
            try await fixture.start(ride(1), bundleId: "com.example.ci")
            try await fixture.apply(.end(EndRequest()), to: bike, at: at(1))
            #expect(try await engine.events(after: 0, filter: EventFilter(), limit: 100).map(\.id) == [1, 2, 3])
            #expect(try await engine.events(after: 1, filter: EventFilter(bundleId: "com.example.bike"), limit: 100).map(\.id) == [3])
            #expect(try await engine.events(after: 0, filter: EventFilter(activityId: bike), limit: 1).map(\.id) == [1])
        }
    }

    @Test(arguments: StoreKind.available) func purgeDeletesOldDismissedActivitiesAndEvents(store: StoreKind) async throws {
        try await EngineFixture.with(store) { fixture in
            let engine = fixture.engine
            let old = try await fixture.start(ride(1)).id
            try await fixture.apply(.end(EndRequest(dismissalPolicy: .immediate)), to: old, at: at(1))
            var pushed = ride(3)
            pushed.pushType = .token
            let withToken = try await fixture.start(pushed, at: at(2))
            fixture.clock.set(at(3))
            let second = try await engine.rotateToken(of: withToken.id).activity.pushToken!
            fixture.clock.set(at(8 * 86_400))
            let rotatedLater = try await engine.rotateToken(of: withToken.id).activity
            let live = try await fixture.start(ride(2), at: at(10 * 86_400)).id
            // A webhook endpoint's attempt log, three attempts older than the cutoff and one after.
            try await fixture.store.write(now: at(10 * 86_400)) { tx in
                try tx.addWebhookAttempts([1, 2, 3, 9 * 86_400].map { time in
                    WebhookAttempt(endpointId: "wh_a", event: "evt_1", type: .activityStarted, attempt: 1, at: at(time), status: 200, error: nil, latencyMs: 1, response: "ok")
                })
            }.value
            let purged = try await engine.purgeHistory(olderThan: 3 * 86_400)
            #expect(purged == PurgeCount(activities: 1, events: 6, tokens: 1, deliveries: 0, webhookAttempts: 3))
            let attempts = try await fixture.store.read { try $0.webhookAttempts(endpointId: "wh_a", deadLettersOnly: false, before: nil, limit: 10) }
            #expect(attempts.map(\.at) == [at(9 * 86_400)])
            // The token retired before the cutoff is forgotten; the one retired after it still answers 410.
            let lookups = try await fixture.store.read { store in
                try [withToken.pushToken!, second, rotatedLater.pushToken!].map { try store.token($0) }
            }
            #expect(lookups == [
                .unknown, .retired(at: at(8 * 86_400), reason: "rotated", bundleId: "com.example.bike"),
                .activity(withToken.id, bundleId: "com.example.bike"),
            ])
            #expect(await reason { _ = try await engine.activity(old, owner: nil) } == .activityNotFound)
            #expect(try await engine.activity(live, owner: nil).state == .active)
        }
    }

    @Test(arguments: StoreKind.available) func purgeBoundsTheOutboxInShortBatches(store: StoreKind) async throws {
        try await EngineFixture.with(store) { fixture in
            let engine = fixture.engine
            // An activity dismissed long ago, which a phone held: its phone row, its token and a
            // delivery still held for it go with it.
            let old = try await fixture.start(ride(1)).id
            try await fixture.apply(.end(EndRequest(dismissalPolicy: .immediate)), to: old, at: at(1))
            let live = try await fixture.start(ride(2), at: at(2)).id
            let token = String(repeating: "0a", count: 32)
            @Sendable func delivery(of activity: ActivityID, created: TimeInterval, finished: TimeInterval?, state: Delivery.State) -> Delivery {
                Delivery(
                    order: .activity(activity), activityId: activity, bundleId: "com.example.bike", deviceId: .defaultDevice,
                    event: .update, payload: "{}", alert: false, expiration: nil, state: state, nextAttemptAt: at(created),
                    createdAt: at(created), finishedAt: finished.map(at)
                )
            }
            let ids = try await fixture.store.write(now: at(2)) { tx in
                try tx.putPhoneActivity(PhoneActivity(activityId: old, bundleId: "com.example.bike", deviceId: .defaultDevice, environment: .development))
                try tx.putPhoneToken(PhoneToken(
                    token: token, kind: .update, bundleId: "com.example.bike", deviceId: .defaultDevice, activityId: old,
                    environment: .development, createdAt: at(1)
                ))
                return try [
                    delivery(of: old, created: 1, finished: nil, state: .held),  // the purged activity's, unfinished
                    delivery(of: live, created: 2, finished: 10, state: .delivered),  // finished before the cutoff
                    delivery(of: live, created: 2, finished: 20, state: .failed),
                    delivery(of: live, created: 2, finished: 30, state: .coalesced),
                    delivery(of: live, created: 2, finished: 5 * 86_400, state: .delivered),  // after it: kept
                    delivery(of: live, created: 2, finished: nil, state: .pending),  // unfinished: kept
                ].map { try tx.insertDelivery($0) }
            }.value
            fixture.clock.set(at(6 * 86_400))
            // Two rows of each kind a transaction: the four deliveries take two, and a third finds less.
            let purged = try await engine.purgeHistory(olderThan: 3 * 86_400, batch: 2)
            #expect(purged.deliveries == 4)
            #expect(purged.activities == 1)
            let left = try await fixture.store.read { store in
                try (ids.compactMap { try store.delivery($0)?.id }, store.phoneActivity(old), store.phoneToken(token))
            }
            #expect(left.0 == [ids[4], ids[5]])
            #expect(left.1 == nil && left.2 == nil)
            #expect(try await engine.purgeHistory(olderThan: 3 * 86_400, batch: 2).isEmpty)
        }
    }

    @Test(arguments: StoreKind.available) func appsAndKeys(store: StoreKind) async throws {
        try await EngineFixture.with(store) { fixture in
            let engine = fixture.engine
            #expect(await reason {
                try await engine.createApp(App(bundleId: "com.example.bike", name: "", createdAt: t0), keyHash: "x")
            } == .appAlreadyExists)
            #expect(try await engine.keyOwner(hash: "hash-com.example.bike") == .app("com.example.bike"))
            try await engine.replaceAdminKey(hash: "admin-1")
            try await engine.replaceAdminKey(hash: "admin-2")
            #expect(try await engine.keyOwner(hash: "admin-1") == nil)
            #expect(try await engine.keyOwner(hash: "admin-2") == .admin)
            #expect(try await engine.apps().map(\.bundleId) == ["com.example.bike"])
        }
    }

    @Test(arguments: StoreKind.available) func aReplacedDeviceKeyStopsWorkingBeforeTheReplacementIsAcknowledged(store: StoreKind) async throws {
        try await EngineFixture.with(store) { fixture in
            let engine = fixture.engine
            try await engine.replaceDeviceKey(deviceId: .defaultDevice, hash: "device-1")
            #expect(try await engine.keyOwner(hash: "device-1") == .device(.defaultDevice))  // now cached
            try await engine.replaceDeviceKey(deviceId: .defaultDevice, hash: "device-2")
            #expect(try await engine.keyOwner(hash: "device-1") == nil)
            #expect(try await engine.keyOwner(hash: "device-2") == .device(.defaultDevice))
        }
    }
}
