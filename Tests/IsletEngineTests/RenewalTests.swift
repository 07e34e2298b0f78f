import Crypto
import Foundation
import IsletCore
@testable import IsletEngine
import IsletTestSupport
import Testing

/// Activities that outlast `maxActiveDuration` (issue 31, docs/renewal.md), on the injected
/// clock and on both stores: a renewing activity is replaced by a successor before its end, an
/// id of the chain stands for its live end, and a display shows one card at every moment.
@Suite("Renewal", .hangDetector)
struct RenewalTests {
    static let renewAfter: TimeInterval = 8 * hour - 30 * 60

    /// Three renewals, each 7.5 hours after the last start, with updates in between by the first
    /// id and by the key: every update lands on the live activity, the chain is read the same by
    /// every id, and each commit that starts a successor also takes its predecessor off the display.
    @Test(arguments: StoreKind.available) func aRenewingActivityLivesThroughThreeRenewals(store: StoreKind) async throws {
        try await EngineFixture.with(store) { fixture in
            let engine = fixture.engine
            var request = ride(0)
            request.renew = true
            fixture.clock.set(t0)
            let first = try await engine.startOrUpdate(key: "ride-7", request: request, timestamp: nil, end: nil, bundleId: "com.example.bike")
            let firstId = first.activity.id
            #expect(first.activity.renew == true && first.activity.renewAt == at(Self.renewAfter))
            #expect(first.warnings.isEmpty)
            var chain = [firstId]
            for round in 1...3 {
                let started = at(Self.renewAfter * Double(round - 1))
                // An update by the first id, and one by the key, before the renewal.
                let byId = try await fixture.apply(update(["speed": .integer(Int64(round * 10))]), to: firstId, at: started.addingTimeInterval(hour))
                #expect(byId.activity.id == chain.last!, "applied to the live one")
                fixture.clock.set(started.addingTimeInterval(2 * hour))
                let byKey = try await engine.startOrUpdate(
                    key: "ride-7", request: ride(Int64(round * 10 + 1)), timestamp: nil, end: nil, bundleId: "com.example.bike"
                )
                #expect(!byKey.created && byKey.activity.id == chain.last!)

                // Nothing happens a second before the renewal.
                fixture.clock.set(at(Self.renewAfter * Double(round)).addingTimeInterval(-1))
                #expect(try await engine.fireDueDeadlines() == 0)
                fixture.clock.set(at(Self.renewAfter * Double(round)))
                let commitsBefore = fixture.recorded.commits.withLock { $0.count }
                #expect(try await engine.fireDueDeadlines() == 1)

                let previous = chain.last!
                let old = try #require(try await engine.read { try $0.activity(previous) })
                let live = try await engine.activity(firstId, owner: nil)
                #expect(live.id != old.id && old.renewedBy == live.id && live.renewedFrom == old.id)
                #expect(old.state == .dismissed && live.state == .active)
                #expect(live.key == "ride-7" && live.attributes == ["route": "Loop"] && live.renew == true)
                #expect(live.content.state == ["speed": .integer(Int64(round * 10 + 1))], "the latest content goes on")
                #expect(live.lastUpdateTimestamp == old.lastUpdateTimestamp)
                #expect(live.autoEndAt == at(Self.renewAfter * Double(round) + 8 * hour))
                chain.append(live.id)
                // Every id of the chain, and the key, names the live one.
                for id in chain { #expect(try await engine.activity(id, owner: nil).id == live.id) }
                #expect(try await engine.read { try $0.liveActivity(key: "ride-7", bundleId: "com.example.bike") }?.id == live.id)
                // One card on the display: the successor's start and the predecessor's dismissal
                // are one commit, so no snapshot shows both or neither.
                let renewal = fixture.recorded.commits.withLock { Array($0[commitsBefore...]) }.filter { commit in
                    commit.events.contains { $0.type == .started && $0.activityId == live.id }
                }
                #expect(renewal.count == 1)
                let dismissed = renewal.first?.events.contains { event in
                    event.activityId == old.id && event.type == .stateChanged && (try? event.decoded().data)?["to"] == "dismissed"
                }
                #expect(dismissed == true)
                let shown = try await engine.activities(ActivityFilter(deviceId: .defaultDevice, states: [.active, .stale, .ended]))
                #expect(shown.items.map(\.id) == [live.id])
                // The histories say it in words.
                let oldHistory = try await engine.history(of: old.id, owner: nil).map { try $0.decoded() }
                #expect(oldHistory.contains { $0.type == .stateChanged && $0.data["reason"] == "renewed" && $0.data["to"] == "ended" })
                let started_ = try #require(try await engine.history(of: live.id, owner: nil).first?.decoded())
                #expect(started_.type == .started && started_.data["renewedFrom"] == .string(old.id))
            }
            // Past three maximum durations, the chain is still live.
            fixture.clock.set(at(3 * 8 * hour + hour))
            try await engine.fireDueDeadlines()
            #expect(try await engine.activity(firstId, owner: nil).state == .active)
            // An end by the first id ends the chain: no more renewal.
            let ended = try await fixture.apply(.end(EndRequest()), to: firstId, at: at(3 * 8 * hour + 2 * hour))
            #expect(ended.activity.id == chain.last! && ended.activity.state == .ended && ended.activity.renewAt == nil)
            fixture.clock.set(at(10 * 8 * hour))
            try await engine.fireDueDeadlines()
            #expect(try await engine.activity(firstId, owner: nil).id == chain.last!)
            #expect(Set(chain).count == 4)
        }
    }

    /// `renewUntil` bounds the chain: the successor whose own end comes after it is not renewed,
    /// and ends at its automatic end.
    @Test(arguments: StoreKind.available) func renewUntilBoundsTheChain(store: StoreKind) async throws {
        try await EngineFixture.with(store) { fixture in
            var request = ride(0)
            request.renew = true
            request.renewUntil = at(10 * hour)
            let first = try await fixture.start(request)
            fixture.clock.set(at(Self.renewAfter))
            try await fixture.engine.fireDueDeadlines()
            let second = try await fixture.engine.activity(first.id, owner: nil)
            #expect(second.id != first.id && second.renewAt == nil && second.renewUntil == at(10 * hour))
            fixture.clock.set(at(Self.renewAfter + 8 * hour))
            try await fixture.engine.fireDueDeadlines()
            let last = try await fixture.engine.activity(first.id, owner: nil)
            #expect(last.id == second.id && last.state == .ended)
            // A start whose chain would end before its first end is not renewed at all.
            request.renewUntil = at(9 * hour)
            fixture.clock.set(at(9 * hour - 1))
            #expect(try await fixture.engine.start(request, bundleId: "com.example.bike").activity.renewAt == nil)
            // renewUntil without renew is refused.
            var bare = ride(1)
            bare.renewUntil = at(20 * hour)
            #expect(await reason { try await fixture.start(bare, at: at(9 * hour)) } == .invalidRequest)
        }
    }

    /// A successor the rules refuse (here: the type's registered attributes changed, and the
    /// old attributes no longer fit) is not started: the activity runs on to its automatic end,
    /// and its delivery log says why — the deadline does not fail again and again.
    @Test(arguments: StoreKind.available) func aRefusedRenewalIsReportedAndTheActivityRunsToItsEnd(store: StoreKind) async throws {
        try await EngineFixture.with(store) { fixture in
            var request = ride(0)
            request.renew = true
            let first = try await fixture.start(request)
            try await fixture.engine.putActivityType(ActivityType(bundleId: "com.example.bike", name: "RideAttributes", attributes: .object(["rider": .string])))
            fixture.clock.set(at(Self.renewAfter))
            #expect(try await fixture.engine.fireDueDeadlines() == 1)
            let kept = try await fixture.engine.activity(first.id, owner: nil)
            #expect(kept.id == first.id && kept.state == .active && kept.renewAt == nil && kept.renewedBy == nil)
            let log = try await fixture.engine.deliveries(of: first.id, owner: nil)
            #expect(log.contains { $0.report.event == "renew" && ($0.report.note ?? "").contains("not renewed") }, "\(log.map(\.report.note))")
            // Nothing due again until its automatic end, which it reaches.
            fixture.clock.set(at(Self.renewAfter + 60))
            #expect(try await fixture.engine.fireDueDeadlines() == 0)
            fixture.clock.set(at(8 * hour))
            try await fixture.engine.fireDueDeadlines()
            #expect(try await fixture.engine.activity(first.id, owner: nil).state == .ended)
        }
    }

    /// A renewing activity on a real iPhone whose app has no push-to-start token for the type
    /// there cannot be renewed on the phone: the start answers a warning, and the activity's
    /// delivery log says so at once, hours before the renewal.
    @Test(arguments: StoreKind.available) func withoutAPushToStartTokenTheStartWarns(store: StoreKind) async throws {
        try await EngineFixture.with(store) { fixture in
            let engine = fixture.engine
            _ = try await engine.putDeliveryCredential(StoredCredential(
                credential: DeliveryCredential(
                    bundleId: "com.example.bike", environment: .development, teamId: "TEAM123456", keyId: "KEY1234567", createdAt: t0
                ),
                privateKey: P256.Signing.PrivateKey().pemRepresentation
            ))
            // The phone has the app, with a push-to-start token for another type only.
            _ = try await engine.registerPushToStartToken(
                String(repeating: "ab", count: 32), environment: .development, deviceId: "annas-iphone", bundleId: "com.example.bike",
                attributesType: "DeliveryAttributes"
            )
            var request = ride(0, device: "annas-iphone")
            request.renew = true
            fixture.clock.set(t0)
            let outcome = try await engine.start(request, bundleId: "com.example.bike")
            #expect(outcome.warnings.count == 1)
            #expect(outcome.warnings.first?.contains("no push-to-start token for RideAttributes") == true, "\(outcome.warnings)")
            let log = try await engine.deliveries(of: outcome.activity.id, owner: nil)
            #expect(log.contains { $0.report.event == "renew" && $0.report.outcome == .held && $0.report.note == outcome.warnings.first })
            // The app started it on the phone itself and reported its token. At the renewal the
            // successor cannot be sent there: the phone keeps its card (no end is sent), and the
            // log says so.
            _ = try await engine.registerUpdateToken(String(repeating: "ef", count: 32), deviceId: "annas-iphone", activityId: outcome.activity.id, owner: nil)
            let status = try await engine.status(of: outcome.activity.id, owner: nil)
            #expect(status.renewal?.possible == false && status.renewal?.why?.contains("no push-to-start token for RideAttributes") == true)
            fixture.clock.set(at(Self.renewAfter))
            #expect(try await engine.fireDueDeadlines() == 1)
            let after = try await engine.deliveries(of: outcome.activity.id, owner: nil)
            #expect(!after.contains { $0.report.event == "end" }, "\(after.map(\.report))")
            #expect(after.contains { $0.report.event == "renew" && ($0.report.note ?? "").contains("the phone keeps this card") })
            fixture.clock.set(t0)
            // Without renew, or with a token for the type, no warning.
            #expect(try await engine.start(ride(1, device: "annas-iphone"), bundleId: "com.example.bike").warnings.isEmpty)
            _ = try await engine.registerPushToStartToken(
                String(repeating: "cd", count: 32), environment: .development, deviceId: "annas-iphone", bundleId: "com.example.bike",
                attributesType: "RideAttributes"
            )
            #expect(try await engine.start(request, bundleId: "com.example.bike").warnings.isEmpty)
        }
    }
}
