import Foundation
import IsletClient
import IsletCore
import IsletTestSupport
import Testing

extension DeliveryLoopTests {
    /// docs/installations.md's whole loop, with no key in the "app" but A's client key: the phone
    /// app (`phone-app`: the app library on IsletKit, which plays ActivityKit against B) registers
    /// with A as a signed-in user and reports its push-to-start token; the backend starts an
    /// activity for the user, never handling a token; the phone shows it, reports its update
    /// token, gets updates and the end. A relaunch of the app reports nothing new and loses
    /// nothing; a push-to-start token iOS rotates reaches A.
    @Test func anAppWithOnlyAClientKeyIsDrivenByItsBackendThroughItsUser() async throws {
        try await withLoop(user: "rider-7") { loop in
            let installations = try await loop.appOnA.installations(user: "rider-7")
            #expect(installations.map(\.installation.id) == [loop.phone], "the app signed in as its user: \(installations)")
            let pushToStart = try #require(installations.first?.tokens.first { $0.kind == .pushToStart && $0.retiredAt == nil })

            // The backend starts a delivery for the user: a send, by user id.
            let send = try await loop.appOnA.createSend(bundleId: Self.bundleId, SendBody(
                action: .start, key: "order-77", audience: .users(["rider-7"]), attributesType: "DeliveryAttributes",
                attributes: ["orderNumber": "77"], content: ActivityContent(state: ["status": "confirmed"]), alert: Alert(title: "Order 77", body: "")
            ))
            let onB = try await eventually("the phone shows order 77") {
                try await loop.appOnB.activities().first { $0.attributes["orderNumber"] == "77" }
            }
            let id = try #require(onB.attributes["islet"]?.stringValue, "the push-to-start carries Islet's id")
            _ = try await eventually("the phone's update token of \(id) reaches A") {
                try await loop.appOnA.phone(loop.phone).tokens.first { $0.kind == .update && $0.activityId == id && $0.retiredAt == nil }
            }
            for status in ["picked up", "on its way"] {
                _ = try await loop.appOnA.createSend(bundleId: Self.bundleId, SendBody(
                    action: .update, key: "order-77", audience: .users(["rider-7"]), content: ActivityContent(state: ["status": .string(status)])
                ))
                try await loop.waitOnB(onB.id, status: status)
            }
            #expect(try await loop.appOnA.send(bundleId: Self.bundleId, id: send.id).counts.started == 1)

            // A relaunch: the same installation, nothing reported again, nothing lost.
            let before = try await loop.appOnA.phone(loop.phone).tokens
            loop.phoneApp?.kill()
            await loop.phoneApp?.waitForEnd(orKillAfter: 30)
            try await loop.startPhoneApp()
            _ = try await eventually("the relaunched app has looked at what it reported") {
                (loop.phoneApp?.output.components(separatedBy: "reported already").count ?? 0) > 2 ? true : nil
            }
            let output = loop.phoneApp?.output ?? ""
            #expect(!output.contains("registered installation") && !output.contains("reported the"), "a relaunch reported again:\n\(output)")
            #expect(try await loop.appOnA.phone(loop.phone).tokens == before, "a relaunch changed A's tokens")
            #expect(try await loop.appOnA.installations().count == 1, "a relaunch made another installation")
            _ = try await loop.appOnA.createSend(bundleId: Self.bundleId, SendBody(
                action: .end, key: "order-77", audience: .users(["rider-7"]), content: ActivityContent(state: ["status": "delivered"])
            ))
            try await loop.waitOnB(onB.id, status: "delivered", state: .ended)

            // iOS hands out a new push-to-start token (B, the phone, rotates it): it reaches A.
            _ = try await IsletClient(server: loop.b.url, key: loop.bData.adminKey, http: loop.http)
                .rotatePushToStartToken(device: "default", bundleId: Self.bundleId)
            let rotated = try await eventually("the rotated push-to-start token reaches A") {
                try await loop.appOnA.phone(loop.phone).tokens.first {
                    $0.kind == .pushToStart && $0.retiredAt == nil && $0.token != pushToStart.token
                }
            }
            let onPhone = try #require(try await loop.appOnB.settings(device: "default").first { $0.bundleId == Self.bundleId }?.pushToStartToken)
            #expect(rotated.token == onPhone)
        }
    }
}
