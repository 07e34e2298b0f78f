import Foundation
import IsletClient
import IsletCore
import IsletTestSupport
import Testing

/// Issue 31 with the real programs, in the loop of `DeliveryLoopTests`: A is the backend, B
/// plays Apple and the phone, the phone app reports its tokens to A.
@Suite("Long activities and the phone's budget, A to B", .serialized, .hangDetector)
struct LongActivityLoopTests {
    /// B ends an activity 60 s after it starts, as an iPhone does after 8 hours; A renews 20 s
    /// ahead. The phone shows the activity without a gap for more than three of its lifetimes,
    /// and the backend uses the first id throughout.
    @Test(.hangDetector)
    func aRenewingActivityOutlastsThreeOfThePhonesLifetimesWithoutAGap() async throws {
        let lifetime = ["ISLET_LIFECYCLE_MAX_ACTIVE_DURATION": "60s", "ISLET_LIFECYCLE_RENEWAL_LEAD": "20s"]
        try await DeliveryLoopTests().withLoop(a: lifetime, b: lifetime) { loop in
            let first = try await loop.appOnA.startWarned(ActivityRequest(
                attributesType: "DeliveryAttributes", attributes: ["orderNumber": "long"],
                content: ActivityContent(state: ["status": "step-0"]), alert: Alert(title: "A long one", body: ""),
                deviceId: loop.phone, renew: true
            ))
            #expect(first.warnings.isEmpty, "the phone has a push-to-start token for the type")
            let firstId = first.value.id
            _ = try await eventually("activity \(firstId) appears on B") {
                try await loop.appOnB.activities().first { $0.attributes["islet"] == .string(firstId) }
            }
            let began = Date()
            var step = 0
            var lastUpdate = began
            var shownOnB = Set<ActivityID>()
            // Three of B's lifetimes, and a little more.
            while Date().timeIntervalSince(began) < 3 * 60 + 10 {
                let live = try await loop.appOnB.activities().filter { $0.bundleId == DeliveryLoopTests.bundleId && $0.state.isLive }
                #expect(!live.isEmpty, "the phone shows nothing \(Int(Date().timeIntervalSince(began))) s in")
                shownOnB.formUnion(live.map(\.id))
                if Date().timeIntervalSince(lastUpdate) >= 10 {
                    step += 1
                    lastUpdate = Date()
                    // The backend keeps the first id; the answer names the live one.
                    let applied = try await loop.appOnA.update(firstId, ContentUpdate(content: ActivityContent(state: ["status": .string("step-\(step)")])))
                    #expect(applied.state.isLive)
                }
                try await Task.sleep(for: .milliseconds(250))
            }
            let live = try await loop.appOnA.activity(firstId)
            #expect(live.id != firstId && live.renewedFrom != nil)
            // Renewed at 40 s, 80 s, 120 s, 160 s: at least four activities on the phone in all.
            #expect(shownOnB.count >= 4, "\(shownOnB.count) activities shown on the phone")
            // The latest content reaches the live activity on the phone.
            let onB = try await eventually("the live activity on B") {
                try await loop.appOnB.activities().first { $0.attributes["islet"] == .string(live.id) }
            }
            try await loop.waitOnB(onB.id, status: "step-\(step)")
            let status = try await loop.appOnA.status(firstId)
            #expect(status.id == live.id && status.requested == firstId && status.renewal?.possible == true, "\(status.summary)")
        }
    }

    /// 40 routine updates and 3 alerts to one phone with a budget of 12 priority-10 pushes an
    /// hour: every alert goes at 10, routine updates go at 5 once a quarter of the budget is
    /// left, the phone never drops one for its budget, and the status endpoint says where the
    /// budget stands.
    @Test(.hangDetector)
    func fortyRoutineUpdatesAndThreeAlertsStayWithinThePhonesBudget() async throws {
        let budget = ["ISLET_LIFECYCLE_PUSH_BUDGET_PER_HOUR": "12"]
        try await DeliveryLoopTests().withLoop(a: budget, b: budget) { loop in
            let (onA, onB) = try await loop.startActivity(order: "budget")
            let alerts: Set<Int> = [11, 26, 41]
            for step in 1...43 {
                let alert = alerts.contains(step) ? Alert(title: "Step \(step)", body: "") : nil
                _ = try await loop.appOnA.update(onA.id, ContentUpdate(content: ActivityContent(state: ["status": .string("s\(step)")]), alert: alert))
                try await loop.waitOnB(onB.id, status: "s\(step)")
            }
            // B applies the last update before A has written Apple's answer down: A's log is read
            // once it has every answer (a hang detector, not a count: the count is checked below).
            var log: [DeliveryLine] = []
            _ = try? await eventually("A has written down 43 delivered updates") {
                log = try await loop.appOnA.deliveries(onA.id).filter { $0.report.outcome == .delivered && $0.report.event == "update" }
                return log.count >= 43 ? true : nil
            }
            #expect(log.count == 43, "each update waited for the last: none coalesced")
            let sentAlerts = log.filter { $0.report.priorityReason?.hasPrefix("an alert") == true }
            #expect(sentAlerts.count == 3 && sentAlerts.allSatisfy { $0.report.priority == 10 }, "\(sentAlerts.map(\.report))")
            let urgent = log.filter { $0.report.priority == 10 }
            #expect(urgent.count == 12, "the whole budget is used, no more: \(log.map { $0.report.priority ?? 0 })")
            #expect(log.filter { $0.report.priority == 5 }.count == 31)
            // The phone never dropped one for its budget.
            let dropped = try await loop.appOnB.history(onB.id).filter { $0.type == .updateIgnored }
            #expect(dropped.isEmpty, "\(dropped.map(\.data))")
            let status = try await loop.appOnA.status(onA.id)
            #expect(status.phone?.budget?.perHour == 12 && status.phone?.budget?.spent == 12 && status.phone?.budget?.left == 0)
            #expect(status.phone?.budget?.nextRefillAt != nil && status.phone?.waiting == 0 && status.phone?.acknowledged?.event == "update")
            #expect(status.lastRefusal == nil, "\(String(describing: status.lastRefusal))")
            #expect(status.summary.contains { $0.contains("priority-10 pushes") && $0.contains("are spent") }, "\(status.summary)")
        }
    }
}
