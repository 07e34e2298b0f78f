import Foundation
import IsletClient
import IsletCore
import IsletTestSupport
import Testing

extension DeliveryLoopTests {
    /// The console in headless Chromium (Tests/IsletIntegrationTests/Browser/console_test.py):
    /// A's console, on loopback and so without a key, while B plays Apple for A and refuses half
    /// its requests with 500. Every view is driven: the overview counts what the server counted
    /// since it started (a reload keeps them), an ignored update shows its reason, a delivery B
    /// refused and then accepted shows both attempts, an app's key sees its app only, ending an
    /// activity from the timeline appears live, B's console lists A's requests (a push B's phone
    /// dropped with its reason and a link to the activity; a request opened stays open as new
    /// ones arrive), every table keeps every column at a phone's width, and every request the
    /// page makes stays on its server. With ISLET_SCREENSHOTS set to a directory, it saves every view there at 1280 and
    /// 390 points wide, light and dark (docs/screenshots holds the last).
    @Test(.enabled(if: browserAvailable, "needs chromium, chromium-driver and Python's selenium (.ci/run installs them)"))
    func theConsoleShowsEveryActivitysLifeAndEveryDelivery() async throws {
        try await withLoop(b: ["ISLET_APNS_FAULTS": "500=0.5"]) { loop in
            let (onA, _) = try await loop.startActivity(order: "7")
            // An update at a time (a newer one would replace a waiting one), until one of them
            // was refused with 500 and then accepted: B refuses half.
            var refusedThenAccepted = false
            for round in 1...30 where !refusedThenAccepted {
                try await loop.update(onA.id, "step \(round)")
                let newest = try await eventually("update \(round) delivered", within: 30) { () async throws -> [DeliveryReport]? in
                    let reports = try await loop.appOnA.deliveries(onA.id).map(\.report)
                    guard let last = reports.map(\.delivery).max() else { return nil }
                    let its = reports.filter { $0.delivery == last }
                    return its.contains { $0.outcome == .delivered } ? its : nil
                }
                refusedThenAccepted = newest.contains { $0.outcome == .retrying && $0.status == 500 }
            }
            try #require(refusedThenAccepted)
            // A push B answers 200 and its phone drops: the activity was ended on the phone
            // before A's update reached it.
            let (lateOnA, lateOnB) = try await loop.startActivity(order: "8")
            // The app is not running, so it does not report the end (it would: `phone-report`).
            loop.phoneApp?.kill()
            _ = try await loop.appOnB.end(lateOnB.id)
            try await loop.update(lateOnA.id, "too late")
            _ = try await eventually("B's phone drops the late update") {
                try await loop.appOnB.history(lateOnB.id).first { $0.type == .updateIgnored && $0.data["reason"] == "activityEnded" }
            }
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Browser/console_test.py")
            var environment = [
                "ISLET_URL": loop.a.url, "ISLET_ADMIN_KEY": loop.aAdminKey, "APPLE_URL": loop.b.url, "LOOP_ACTIVITY": onA.id,
                "LOOP_APP_KEY": loop.keyOnA, "DROPPED_ON_B": lateOnB.id, "PYTHONUNBUFFERED": "1",
            ]
            if let shots = ProcessInfo.processInfo.environment["ISLET_SCREENSHOTS"] {
                try FileManager.default.createDirectory(atPath: shots, withIntermediateDirectories: true)
                environment["SHOTS"] = shots
            }
            let (exit, stdout, stderr) = try await runPython(script, environment: environment, timeout: 240)
            #expect(exit == 0, "console_test.py failed:\n\(stdout)\(stderr)")
            #expect(stdout.split(separator: "\n").filter { $0.hasPrefix("ok: ") }.count == 10, "\(stdout)\(stderr)")
        }
    }

    /// The console's two delivery actions through the API: an app's delivery paused holds its
    /// changes, saying why; a held delivery sent again is tried at once (and held again while
    /// paused), the log naming who asked; resumed, what was held reaches the phone; a delivered
    /// one is not sent again.
    @Test func aPausedAppsChangesWaitAndADeliverySentAgainGoesAtOnce() async throws {
        try await withLoop { loop in
            let (onA, onB) = try await loop.startActivity(order: "9")
            let admin = IsletClient(server: loop.a.url, key: loop.aAdminKey, http: loop.http)
            #expect(try await admin.updateApp(Self.bundleId, UpdateAppBody(deliveryPaused: true)).deliveryPaused)
            try await loop.update(onA.id, "preparing")
            let held = try await eventually("the update held, saying why") {
                try await loop.appOnA.deliveries(onA.id).first { $0.report.outcome == .held && $0.report.note?.contains("paused") == true }
            }
            let retried = try await admin.retryDelivery(held.report.delivery)
            #expect(retried.state == "pending" && retried.delivery == held.report.delivery)
            _ = try await eventually("the log says who asked, and the delivery is held again") { () async throws -> Bool? in
                let reports = try await loop.appOnA.deliveries(onA.id).map(\.report).filter { $0.delivery == held.report.delivery }
                guard let asked = reports.lastIndex(where: { $0.note == "sent again: asked by the admin key" }) else { return nil }
                return reports[(asked + 1)...].contains { $0.outcome == .held } ? true : nil
            }
            #expect(try await loop.appOnB.activity(onB.id).content.state["status"] == "confirmed")
            #expect(try await admin.updateApp(Self.bundleId, UpdateAppBody(deliveryPaused: false)).deliveryPaused == false)
            try await loop.waitOnB(onB.id, status: "preparing")
            // The phone can show it a moment before A has written Apple's answer down.
            _ = try await eventually("A's log says it was delivered") {
                try await loop.appOnA.deliveries(onA.id).first { $0.report.delivery == held.report.delivery && $0.report.outcome == .delivered }
            }
            let again = await #expect(throws: ClientError.self) { try await admin.retryDelivery(held.report.delivery) }
            #expect(again?.description.contains("delivered") == true, "\(String(describing: again))")
            let other = await #expect(throws: ClientError.self) { try await loop.appOnA.retryDelivery(999_999) }
            #expect(other?.description.contains("deliveryNotFound") == true, "\(String(describing: other))")
        }
    }
}
