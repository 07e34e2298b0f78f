import Foundation
import IsletClient
import IsletCore
import IsletTestSupport
import Testing

/// Every webhook event type from one run of the real programs (issue 43's "done when"): A is
/// the backend, B plays Apple and the phone, the phone app (ActivityKit's API on IsletKit)
/// reports its tokens and what the phone saw to A, and a receiver written with Standard
/// Webhooks' own verifier takes A's webhooks.
@Suite("Every webhook event type, A to B", .serialized, .hangDetector)
struct WebhookEveryTypeTests {
    /// A's budget is 3 priority-10 pushes an hour; its activities live 30 s and renew 25 s
    /// ahead, as an iPhone's live 8 hours.
    static let a = [
        "ISLET_LIFECYCLE_PUSH_BUDGET_PER_HOUR": "3", "ISLET_LIFECYCLE_MAX_ACTIVE_DURATION": "30s", "ISLET_LIFECYCLE_RENEWAL_LEAD": "25s",
    ]

    @Test(.enabled(if: standardWebhooksAvailable, "needs the standardwebhooks package (pip)"), .hangDetector)
    func aVerifyingReceiverGetsEveryTypeFromOneRun() async throws {
        try await WebhookReceiver.with { receiver in
            try await DeliveryLoopTests().withLoop(a: Self.a, b: ["ISLET_LIFECYCLE_MAX_ACTIVE_DURATION": "30s"]) { loop in
                let app = DeliveryLoopTests.bundleId
                let endpoint = try await loop.appOnA.createWebhook(bundleId: app, CreateWebhookBody(url: receiver.url))
                try #require(endpoint.secret).write(to: receiver.secretFile, atomically: true, encoding: .utf8)
                let bAdmin = IsletClient(server: loop.b.url, key: loop.bData.adminKey, http: loop.http)
                // webhook.test
                #expect(try await loop.appOnA.testWebhook(bundleId: app, id: endpoint.id).status == 200)
                // token.updated (push-to-start, reported): iOS rotates the token, the app reports
                // it; a start sent before A has it would go to the old one, which Apple refuses.
                let before = try await loop.appOnA.phone(loop.phone).tokens.first { $0.kind == .pushToStart && $0.retiredAt == nil }
                _ = try await bAdmin.rotatePushToStartToken(device: "default", bundleId: app)
                _ = try await eventually("the rotated token reaches A") {
                    try await loop.appOnA.phone(loop.phone).tokens.first {
                        $0.kind == .pushToStart && $0.retiredAt == nil && $0.token != before?.token
                    }
                }

                // activity.started, delivery.sent, token.updated (update, reported), activity.updated.
                // Each reaches the phone before the next: none is coalesced into a later one.
                let (ride, rideOnB) = try await loop.startActivity(order: "1")
                for status in ["preparing", "cooking"] {
                    try await loop.update(ride.id, status)
                    try await loop.waitOnB(rideOnB.id, status: status)
                }
                // budget.exhausted: an alert spends the last of 3.
                _ = try await loop.appOnA.update(ride.id, ContentUpdate(
                    content: ActivityContent(state: ["status": "onTheWay"]), alert: Alert(title: "On the way", body: "")
                ))
                try await loop.waitOnB(rideOnB.id, status: "onTheWay")
                // delivery.held: paused, then resumed.
                _ = try await loop.appOnA.updateApp(app, UpdateAppBody(deliveryPaused: true))
                try await loop.update(ride.id, "held")
                _ = try await eventually("the held delivery") {
                    try await loop.appOnA.deliveries(ride.id).first { $0.report.outcome == .held }
                }
                _ = try await loop.appOnA.updateApp(app, UpdateAppBody(deliveryPaused: false))
                // activity.stale, then activity.ended (app) and activity.dismissed (policy).
                _ = try await loop.appOnA.update(ride.id, ContentUpdate(
                    content: ActivityContent(state: ["status": "arriving"], staleDate: Date().addingTimeInterval(1))
                ))
                _ = try await eventually("A's ride goes stale") { try await loop.appOnA.activity(ride.id).state == .stale ? true : nil }
                _ = try await loop.appOnA.end(ride.id, EndRequest(dismissalPolicy: .immediate))

                // activity.ended (phone) and activity.dismissed (person): on the phone, as its app reports.
                let (shown, shownOnB) = try await loop.startActivity(order: "2")
                _ = try await bAdmin.end(shownOnB.id, EndRequest())
                _ = try await eventually("the phone's end reaches A") { try await loop.appOnA.activity(shown.id).state == .ended ? true : nil }
                _ = try await bAdmin.dismiss(shownOnB.id)
                _ = try await eventually("the person's dismissal reaches A") {
                    try await loop.appOnA.activity(shown.id).state == .dismissed ? true : nil
                }

                // activity.renewed: 5 s after its start.
                let long = try await loop.appOnA.start(ActivityRequest(
                    attributesType: "DeliveryAttributes", attributes: ["orderNumber": "3"], content: ActivityContent(state: ["status": "long"]),
                    alert: Alert(title: "Order 3", body: ""), deviceId: loop.phone, renew: true
                ))
                _ = try await eventually("A renews it") { try await loop.appOnA.activity(long.id).id != long.id ? true : nil }

                // delivery.failed: a token Apple never knew.
                let unknown = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
                _ = try await loop.appOnA.registerPushToStartToken(unknown, environment: .development, device: "phone-2", attributesType: "DeliveryAttributes")
                _ = try await loop.appOnA.start(ActivityRequest(
                    attributesType: "DeliveryAttributes", attributes: ["orderNumber": "4"], content: ActivityContent(state: ["status": "x"]),
                    alert: Alert(title: "Order 4", body: ""), deviceId: "phone-2"
                ))

                // token.invalidated: the app is not running to report it, the card leaves the
                // phone, and Apple answers 410.
                let (gone, goneOnB) = try await loop.startActivity(order: "5")
                loop.phoneApp?.kill()
                _ = try await bAdmin.end(goneOnB.id, EndRequest(dismissalPolicy: .immediate))
                try await loop.update(gone.id, "too late")

                let every = Set(WebhookEventType.allCases.map(\.rawValue))
                func received() throws -> (all: [JSONValue], missing: Set<String>) {
                    let received = try receiver.receivedLines().map { try WireFormat.decoder().decode(JSONValue.self, from: $0) }
                    return (received, every.subtracting(received.compactMap { $0["event"]?["type"]?.stringValue }))
                }
                do {
                    _ = try await eventually("every type", within: 60) { try received().missing.isEmpty ? true : nil }
                } catch {
                    Issue.record("missing: \(try received().missing.sorted())")
                    throw error
                }
                let received = try received().all
                #expect(received.allSatisfy { $0["verified"] == true && $0["status"] == 200 }, "\(received.filter { $0["verified"] != true })")
                let events = received.compactMap { $0["event"] }
                func data(_ type: String) -> [JSONValue] { events.filter { $0["type"]?.stringValue == type }.compactMap { $0["data"] } }

                #expect(data("activity.started").allSatisfy { $0["source"] == "api" })
                let ends = Set(data("activity.ended").compactMap { $0["by"]?.stringValue })
                let dismissals = Set(data("activity.dismissed").compactMap { $0["by"]?.stringValue })
                #expect(ends.isSuperset(of: ["app", "phone", "renewal"]), "\(ends)")
                #expect(dismissals.isSuperset(of: ["person", "policy"]), "\(dismissals)")
                #expect(data("activity.ended").contains { $0["by"] == "phone" && $0["activity"]?["id"] == .string(shown.id) })
                #expect(data("activity.dismissed").contains { $0["by"] == "person" && $0["activity"]?["id"] == .string(shown.id) })
                let tokens = data("token.updated")
                #expect(tokens.contains { $0["kind"] == "push-to-start" && $0["reported"] == true && $0["attributesType"] == "DeliveryAttributes" }, "\(tokens)")
                #expect(tokens.contains { $0["kind"] == "update" && $0["reported"] == true && $0["activityId"] == .string(ride.id) })
                #expect(tokens.allSatisfy { $0["token"] == nil && $0["pushToken"] == nil })
                let budget = try #require(data("budget.exhausted").first)
                #expect(budget["budget"]?["perHour"] == 3 && budget["budget"]?["spent"] == 3 && budget["activityId"] == .string(ride.id), "\(budget)")
                #expect(data("delivery.held").contains { $0["reason"]?.stringValue?.contains("delivery is paused") == true })
                #expect(data("delivery.failed").contains { $0["delivery"]?["reason"] == "BadDeviceToken" })
                #expect(data("token.invalidated").contains { $0["activityId"] == .string(gone.id) && $0["delivery"]?["status"] == 410 })
                #expect(data("activity.renewed").contains { $0["from"] == .string(long.id) })
                #expect(data("delivery.sent").count >= 5)
            }
        }
    }
}
