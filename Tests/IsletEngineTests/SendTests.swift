import Foundation
import IsletCore
@testable import IsletEngine
import IsletTestSupport
import Testing

/// Sends (docs/audiences.md): one call's start, update or end reaches every phone of its
/// audience exactly once — through restarts mid-send and two nodes sharing it — at its `at`,
/// and a start's `endAt` ends what it started. The clock moves by hand; `runDueSends` is what
/// the send runner calls.
@Suite("Sends", .hangDetector)
struct SendTests {
    private let app: BundleID = "com.example.bike"

    /// `phones` phones, and a user for each two of them (the second phone shared with the next
    /// user, so a phone reached through two users counts once), tagged `match: 123`; every
    /// third user also `team: ajax`.
    private func fans(_ phones: Int, in fixture: EngineFixture) async throws -> [DeviceID] {
        let devices = (0..<phones).map { String(format: "phone-%04d", $0) }
        for device in devices { try await fixture.engine.createDevice(Device(id: device, name: device, createdAt: t0)) }
        for user in 0..<phones {
            var tags = ["match": "123"]
            if user % 3 == 0 { tags["team"] = "ajax" }
            _ = try await fixture.engine.putUser(
                bundleId: app, externalId: String(format: "u-%04d", user),
                PutAppUserBody(devices: [devices[user], devices[(user + 1) % phones]], tags: tags)
            )
        }
        return devices
    }

    private func start(_ audience: Audience, at: Date? = nil, endAt: Date? = nil) -> SendBody {
        SendBody(
            action: .start, key: "match-123", audience: audience, at: at, attributesType: "MatchAttributes", attributes: ["home": "Ajax"],
            content: ActivityContent(state: ["score": "0-0"]), endAt: endAt
        )
    }

    /// The live activities with the send's key on each phone.
    private func cards(_ devices: [DeviceID], in fixture: EngineFixture) async throws -> [DeviceID: [Activity]] {
        try await fixture.engine.read { store in
            var cards: [DeviceID: [Activity]] = [:]
            for device in devices {
                let found = try store.activities(ActivityFilter(bundleId: self.app, deviceId: device, limit: 100)).map(\.activity)
                cards[device] = found.filter { $0.key == "match-123" && $0.state.isLive }
            }
            return cards
        }
    }

    @Test(arguments: StoreKind.available) func aStartByTagReachesEveryPhoneOnceThenAnUpdateAndAnEndFollowIt(store: StoreKind) async throws {
        var rules = LifecycleRules()
        rules.maxActivitiesPerApp = 100_000
        try await EngineFixture.with(store, rules: rules, apps: [app]) { fixture in
            let devices = try await fans(240, in: fixture)
            let made = try await fixture.engine.createSend(bundleId: app, start(.tags(["match": "123"])))
            #expect(made.status == .running && made.counts.targeted == 0, "answered at once, nothing resolved inline")
            try await fixture.engine.runDueSends()
            let done = try await fixture.engine.send(made.id, bundleId: app)
            #expect(done.status == .done && done.counts.targeted == 240 && done.counts.started == 240 && done.counts.failed == 0)
            let shown = try await cards(devices, in: fixture)
            #expect(shown.values.allSatisfy { $0.count == 1 }, "exactly one card on every phone")

            // The same start again finds them live: skipped, nothing twice.
            let again = try await fixture.engine.createSend(bundleId: app, start(.tags(["match": "123"])))
            try await fixture.engine.runDueSends()
            #expect(try await fixture.engine.send(again.id, bundleId: app).counts.skipped == 240)
            #expect(try await cards(devices, in: fixture).values.allSatisfy { $0.count == 1 })

            // An update by tag (a narrower audience: Ajax fans' phones), then an end for all.
            let update = try await fixture.engine.createSend(
                bundleId: app, SendBody(action: .update, key: "match-123", audience: .tags(["team": "ajax"]), content: ActivityContent(state: ["score": "1-0"]))
            )
            try await fixture.engine.runDueSends()
            let updated = try await fixture.engine.send(update.id, bundleId: app)
            #expect(updated.counts.updated == updated.counts.targeted && updated.counts.targeted == 160)
            let end = try await fixture.engine.createSend(bundleId: app, SendBody(action: .end, key: "match-123", audience: .all, dismissalPolicy: .immediate))
            try await fixture.engine.runDueSends()
            #expect(try await fixture.engine.send(end.id, bundleId: app).counts.ended == 240)
            #expect(try await cards(devices, in: fixture).values.allSatisfy(\.isEmpty))
            let failedOnly = try await fixture.engine.sendTargets(made.id, bundleId: app, outcome: .failed, page: PageRequest())
            #expect(failedOnly.items.isEmpty)
        }
    }

    @Test func aScheduledStartWaitsForItsTimeAndItsEndAtEndsWhatItStarted() async throws {
        try await EngineFixture.with(apps: [app]) { fixture in
            let devices = try await fans(10, in: fixture)
            let made = try await fixture.engine.createSend(bundleId: app, start(.users(["u-0000", "u-0005"]), at: at(10), endAt: at(7_500)))
            #expect(made.status == .scheduled && made.followUp != nil)
            try await fixture.engine.runDueSends()
            #expect(try await cards(devices, in: fixture).values.allSatisfy(\.isEmpty), "nothing before its time")

            fixture.clock.set(at(10))
            try await fixture.engine.runDueSends()
            let started = try await cards(devices, in: fixture).filter { !$0.value.isEmpty }.keys.sorted()
            #expect(started == ["phone-0000", "phone-0001", "phone-0005", "phone-0006"])

            fixture.clock.set(at(7_500))
            try await fixture.engine.runDueSends()
            let followUp = try await fixture.engine.send(try #require(made.followUp), bundleId: app)
            #expect(followUp.status == .done && followUp.counts.ended == 4)
            #expect(try await cards(devices, in: fixture).values.allSatisfy(\.isEmpty))
        }
    }

    /// A single start, update and end given `at` are kept as sends and carried out then: the
    /// start on its one phone, the update and end on the activity it made (as renewed since).
    @Test func aSingleStartUpdateAndEndGivenAtAreCarriedOutThen() async throws {
        try await EngineFixture.with(apps: [app]) { fixture in
            let devices = try await fans(2, in: fixture)
            let request = ActivityRequest(attributesType: "MatchAttributes", content: ActivityContent(state: ["score": "0-0"]), deviceId: devices[1])
            let start = try await fixture.engine.scheduleStart(request, bundleId: app, at: at(30))
            #expect(start.status == .scheduled && start.body.audience == .devices([devices[1]]))
            try await fixture.engine.runDueSends()
            #expect(try await fixture.engine.activities(ActivityFilter(bundleId: app)).items.isEmpty, "nothing before its time")

            fixture.clock.set(at(30))
            try await fixture.engine.runDueSends()
            let started = try await fixture.engine.sendTargets(start.id, bundleId: app, outcome: .started, page: PageRequest())
            let id = try #require(started.items.first?.activityId)
            let activity = try await fixture.engine.activity(id, owner: nil)
            #expect(started.items.count == 1 && activity.deviceId == devices[1] && activity.createdAt == at(30))

            let update = try await fixture.engine.scheduleChange(.update(ContentUpdate(content: ActivityContent(state: ["score": "1-0"]))), to: id, owner: app, at: at(90))
            let end = try await fixture.engine.scheduleChange(.end(EndRequest(dismissalPolicy: .immediate)), to: id, owner: app, at: at(120))
            #expect(update.body.audience == .activity(id) && end.status == .scheduled)
            fixture.clock.set(at(90))
            try await fixture.engine.runDueSends()
            #expect(try await fixture.engine.activity(id, owner: nil).content.state == ["score": "1-0"])
            #expect(try await fixture.engine.activity(id, owner: nil).state == .active, "the end waits for its own time")
            fixture.clock.set(at(120))
            try await fixture.engine.runDueSends()
            #expect(try await fixture.engine.send(end.id, bundleId: app).counts.ended == 1)
            #expect(try await fixture.engine.activity(id, owner: nil).state.isLive == false)

            // Another app's activity is not found, as for a single update now.
            await #expect(throws: IsletError(.activityNotFound, "No activity \(id).")) {
                try await fixture.engine.scheduleChange(.end(EndRequest()), to: id, owner: "com.example.other", at: at(200))
            }
        }
    }

    @Test func aScheduledSendMovesAndCancelsAndTakesItsFollowUpWithIt() async throws {
        try await EngineFixture.with(apps: [app]) { fixture in
            _ = try await fans(4, in: fixture)
            let made = try await fixture.engine.createSend(bundleId: app, start(.all, at: at(60), endAt: at(600)))
            let moved = try await fixture.engine.moveSend(made.id, bundleId: app, to: at(120))
            #expect(moved.body.at == at(120))
            await #expect(throws: IsletError.self) { try await fixture.engine.moveSend(made.id, bundleId: app, to: at(700)) }
            let cancelled = try await fixture.engine.cancelSend(made.id, bundleId: app)
            #expect(cancelled.status == .cancelled)
            #expect(try await fixture.engine.send(try #require(made.followUp), bundleId: app).status == .cancelled)
            fixture.clock.set(at(700))
            #expect(try await fixture.engine.runDueSends() == 0)
            await #expect(throws: IsletError.self) { try await fixture.engine.moveSend(made.id, bundleId: app, to: at(800)) }
            await #expect(throws: IsletError(.sendNotFound, "com.example.bike has no send snd_nowhere.")) {
                try await fixture.engine.send("snd_nowhere", bundleId: app)
            }
        }
    }

    /// A restart between any two of a send's transactions (as after kill -9: what committed
    /// stays, the rest did not happen) leaves every phone with exactly one card.
    @Test(arguments: StoreKind.available) func aSendInterruptedBetweenItsStepsStillReachesEachPhoneOnce(store: StoreKind) async throws {
        var rules = LifecycleRules()
        rules.maxActivitiesPerApp = 100_000
        try await EngineFixture.with(store, rules: rules, apps: [app]) { fixture in
            let devices = try await fans(450, in: fixture)
            let made = try await fixture.engine.createSend(bundleId: app, start(.all))
            var steps = 0
            while try await fixture.engine.step(made.id) {
                steps += 1
                try await fixture.restart()
            }
            #expect(steps >= 4, "a page resolved, three batches, done")
            let done = try await fixture.engine.send(made.id, bundleId: app)
            #expect(done.status == .done && done.counts.started == 450)
            #expect(try await cards(devices, in: fixture).values.allSatisfy { $0.count == 1 })
        }
    }

    /// Two nodes on one PostgreSQL run the same send (three batches) at once: each phone once, both did some.
    /// An update whose phones are exactly a broadcast channel's goes as one broadcast (kept by
    /// the channel, as the app's broadcast is); a narrower audience goes phone by phone.
    @Test(arguments: StoreKind.available) func anUpdateToEveryPhoneOfAChannelGoesAsOneBroadcast(store: StoreKind) async throws {
        try await EngineFixture.with(store, apps: [app]) { fixture in
            let devices = try await fans(12, in: fixture)
            let channel = try await fixture.engine.createChannel(bundleId: app, storagePolicy: 1, limit: 10)
            var onChannel = start(.tags(["match": "123"]))
            onChannel.pushType = .channel(channel.id)
            _ = try await fixture.engine.createSend(bundleId: app, onChannel)
            try await fixture.engine.runDueSends()
            #expect(try await cards(devices, in: fixture).values.allSatisfy { $0.count == 1 && $0[0].pushType == .channel(channel.id) })

            func score(_ score: String, to audience: Audience) async throws -> (Send, [SendTarget]) {
                let made = try await fixture.engine.createSend(
                    bundleId: app, SendBody(action: .update, key: "match-123", audience: audience, content: ActivityContent(state: ["score": .string(score)]))
                )
                try await fixture.engine.runDueSends()
                let targets = try await fixture.engine.sendTargets(made.id, bundleId: app, outcome: nil, page: PageRequest(limit: 100)).items
                return (try await fixture.engine.send(made.id, bundleId: app), targets)
            }
            func kept() async throws -> Activity.PushedChange? {
                try await fixture.engine.read { store in try store.storedMessage(channelId: channel.id)?.change }
            }
            // Every phone of the channel ("all" is the same phones): one broadcast.
            let (whole, wholeTargets) = try await score("1-0", to: .all)
            #expect(whole.status == .done && whole.counts.updated == 12 && wholeTargets.count == 12)
            #expect(wholeTargets.allSatisfy { $0.outcome == .updated && $0.reason == "by one broadcast on channel \(channel.id)" })
            #expect(try await kept() == .update(ContentUpdate(content: ActivityContent(state: ["score": "1-0"]))), "the channel keeps it, as a broadcast")
            #expect(try await cards(devices, in: fixture).values.allSatisfy { $0.first?.content.state["score"] == "1-0" })

            // Ajax fans' phones, 8 of the 12: phone by phone, and the channel keeps what it had.
            let (narrow, narrowTargets) = try await score("2-0", to: .tags(["team": "ajax"]))
            #expect(narrow.counts.updated == 8 && narrowTargets.allSatisfy { $0.outcome == .updated && $0.reason == nil })
            #expect(try await kept() == .update(ContentUpdate(content: ActivityContent(state: ["score": "1-0"]))))
            let shown = try await cards(devices, in: fixture)
            #expect(shown.values.filter { $0.first?.content.state["score"] == "2-0" }.count == 8)
        }
    }

    @Test func twoNodesShareOneSendWithoutReachingAPhoneTwice() async throws {
        guard StoreKind.available.contains(.postgres) else { return }
        var rules = LifecycleRules()
        rules.maxActivitiesPerApp = 100_000
        try await EngineFixture.with(.postgres, rules: rules, apps: [app]) { fixture in
            let devices = try await fans(600, in: fixture)
            let node = try await fixture.node()
            do {
                let made = try await fixture.engine.createSend(bundleId: app, start(.all))
                async let first = fixture.engine.runDueSends()
                async let second = node.engine.runDueSends()
                let (a, b) = try await (first, second)
                #expect(a > 0 && b > 0, "both nodes took part: \(a), \(b)")
                let done = try await fixture.engine.send(made.id, bundleId: app)
                #expect(done.status == .done && done.counts.started == 600 && done.counts.failed == 0)
                #expect(try await cards(devices, in: fixture).values.allSatisfy { $0.count == 1 })
                try await node.stop()
            } catch {
                try? await node.stop()
                throw error
            }
        }
    }
}
