import Crypto
import Foundation
import IsletCore
@testable import IsletEngine
import IsletTestSupport
import Testing

/// The priority-10 budget is each app's on each phone (issue 31): the sender plans every
/// delivery against the app's sends to the phone, and against what it has out and not yet
/// answered, so several activities of one app never go at 10 on the last unit.
@Suite("The phone's budget", .hangDetector)
struct PhoneBudgetTests {
    static let phone: DeviceID = "annas-iphone"

    /// Two activities of one app on one phone, the hour's budget (12) down to 4: a routine
    /// update goes at 10 while more than a quarter (3) is left. The first claimed takes the
    /// fourth unit; the second — in the same round, or in the next while the first is out —
    /// goes at 5.
    @Test(arguments: StoreKind.available) func activitiesOfOneAppShareTheBudgetAndWhatIsOutCounts(store: StoreKind) async throws {
        for rounds in [1, 2] {
            try await EngineFixture.with(store) { fixture in
                let engine = fixture.engine
                fixture.clock.set(t0)
                let ids = try await Self.twoActivitiesOnAPhone(engine)
                try await engine.write { tx in
                    try tx.putPhoneBudget(deviceId: Self.phone, bundleId: "com.example.bike", sends: (1...8).map { at(Double(-$0 * 60)) })
                }
                for id in ids { try await fixture.apply(update(["speed": 20]), to: id, at: at(1)) }
                let claimed =
                    rounds == 1
                    ? try await engine.claimDeliveries(limit: 10, lease: 60)
                    : try await engine.claimDeliveries(limit: 1, lease: 60) + engine.claimDeliveries(limit: 1, lease: 60)
                #expect(claimed.count == 2)
                #expect(claimed.map(\.priority).sorted() == [5, 10], "\(claimed.map(\.priorityReason))")
                // The status counts what the store has: 8 of 12 spent until Apple answers.
                let status = try await engine.status(of: ids[0], owner: nil)
                #expect(status.phone?.budget?.spent == 8 && status.phone?.budget?.left == 4)
                #expect(status.phone?.budget?.nextRefillAt == at(-8 * 60 + 3600))
            }
        }
    }

    /// An app whose activities each went at 10 under a budget per activity now shares one: the
    /// sends of one activity leave less for the other.
    @Test(arguments: StoreKind.available) func oneActivitysSendsLeaveLessForTheOther(store: StoreKind) async throws {
        try await EngineFixture.with(store) { fixture in
            let engine = fixture.engine
            fixture.clock.set(t0)
            let ids = try await Self.twoActivitiesOnAPhone(engine)
            // Twelve sends of the other activity in the last hour, counted as they were answered.
            for minute in 1...12 {
                fixture.clock.set(at(Double(minute - 30) * 60))
                try await engine.write { tx in
                    try PhoneBudget.spend(deviceId: Self.phone, bundleId: "com.example.bike", perHour: 12, activityId: ids[0], in: tx)
                }
            }
            // The twelfth ran the budget out, and said so once (a webhook's `budget.exhausted`).
            let exhausted = try await engine.events(after: 0, filter: EventFilter(), limit: 1000).filter { $0.type == .budgetExhausted }
            #expect(exhausted.count == 1)
            let said = try exhausted.first.map { try $0.decoded().data.decode(BudgetExhaustion.self) }
            #expect(said == BudgetExhaustion(perHour: 12, spent: 12, nextRefillAt: at(-29 * 60 + 3600)))
            #expect(exhausted.first?.activityId == ids[0] && exhausted.first?.deviceId == Self.phone)
            try await fixture.apply(update(["speed": 1]), to: ids[1], at: at(1))
            let claimed = try await engine.claimDeliveries(limit: 10, lease: 60)
            #expect(claimed.map(\.priority) == [5])
            #expect(claimed.first?.priorityReason.contains("a budget of 12 an hour spent") == true, "\(claimed.map(\.priorityReason))")
        }
    }

    /// A round's answers spend the phone's budget together, in one write: the count is every
    /// push Apple took, and the one that spent the last unit says so, as it would alone.
    @Test(arguments: StoreKind.available) func aRoundsSpendsAreCountedAsEachAloneWouldBe(store: StoreKind) async throws {
        try await EngineFixture.with(store) { fixture in
            let engine = fixture.engine
            fixture.clock.set(t0)
            let ids = try await Self.twoActivitiesOnAPhone(engine)
            let key = PhoneBudget.Key(deviceId: Self.phone, bundleId: "com.example.bike")
            fixture.clock.set(at(-40 * 60))
            try await engine.write { tx in
                var spends = PhoneBudget.Spends()
                for _ in 0..<10 { spends.add(key, perHour: 12, activityId: ids[0]) }
                try spends.write(in: tx)
            }
            fixture.clock.set(at(-10 * 60))
            try await engine.write { tx in
                var spends = PhoneBudget.Spends()
                for id in [ids[0], ids[1], ids[0]] { spends.add(key, perHour: 12, activityId: id) }
                try spends.write(in: tx)
            }
            let sends = try await engine.read { store in try store.phoneBudget(deviceId: Self.phone, bundleId: "com.example.bike") }
            #expect(sends.count == 13)
            let exhausted = try await engine.events(after: 0, filter: EventFilter(), limit: 1000).filter { $0.type == .budgetExhausted }
            #expect(exhausted.count == 1)
            let said = try exhausted.first.map { try $0.decoded().data.decode(BudgetExhaustion.self) }
            #expect(said == BudgetExhaustion(perHour: 12, spent: 12, nextRefillAt: at(-40 * 60 + 3600)))
            // The twelfth push was the round's second: the other activity's.
            #expect(exhausted.first?.activityId == ids[1])
        }
    }

    /// A phone with the app's credentials, and two of the app's activities on it that the app
    /// started itself and reported the update tokens of.
    static func twoActivitiesOnAPhone(_ engine: Engine) async throws -> [ActivityID] {
        _ = try await engine.putDeliveryCredential(StoredCredential(
            credential: DeliveryCredential(
                bundleId: "com.example.bike", environment: .development, teamId: "TEAM123456", keyId: "KEY1234567", createdAt: t0
            ),
            privateKey: P256.Signing.PrivateKey().pemRepresentation
        ))
        // Its push-to-start token is for another type: the starts send nothing.
        _ = try await engine.registerPushToStartToken(
            String(repeating: "ab", count: 32), environment: .development, deviceId: phone, bundleId: "com.example.bike",
            attributesType: "DeliveryAttributes"
        )
        var ids: [ActivityID] = []
        for (index, digits) in ["c1", "c2"].enumerated() {
            let id = try await engine.start(ride(Int64(index), device: phone), bundleId: "com.example.bike").activity.id
            _ = try await engine.registerUpdateToken(String(repeating: digits, count: 32), deviceId: phone, activityId: id, owner: nil)
            ids.append(id)
        }
        return ids
    }
}
