import Foundation
import IsletCore
import IsletServer
import IsletTestSupport
import Testing

@Suite("Display routes", .hangDetector)
struct DisplayRouteTests {
    @Test func thePageAndItsFilesAreServed() async throws {
        try await withIslet { islet in
            for path in ["/", "/devices/kitchen"] {
                let page = try await islet.request(.GET, path)
                #expect(page.status == 200)
                #expect(page.headers["Content-Type"].first == "text/html; charset=utf-8")
                #expect(page.text.contains(#"<script src="/display/display.js"></script>"#))
            }
            for (file, type) in [
                ("display.js", "text/javascript"), ("display.css", "text/css"), ("presentation.css", "text/css"),
                ("chrome.css", "text/css"), ("presentation.js", "text/javascript"),
            ] {
                let reply = try await islet.request(.GET, "/display/\(file)")
                #expect(reply.status == 200, "\(file)")
                #expect(reply.headers["Content-Type"].first?.hasPrefix(type) == true, "\(file)")
                #expect(reply.text.count > 500, "\(file)")
            }
            let script = try await islet.request(.GET, "/islet.js")
            #expect(script.headers["Content-Type"].first == "text/javascript; charset=utf-8")
            #expect(script.text.contains("global.LiveActivity = LiveActivity"))
            #expect(try await islet.request(.GET, "/display/secrets.txt").reason == "routeNotFound")
            #expect(try await islet.request(.GET, "/display/..%2Fadmin.key").reason == "routeNotFound")
        }
    }

    @Test func theSnapshotShowsTheDevicesActivitiesInRelevanceOrderWithTheirFrames() async throws {
        try await withIslet { islet in
            let bike = try await islet.createApp("com.example.bike")
            // Equal scores go to the earliest started: each starts a second after the last.
            let low = try await islet.start(key: bike, state: ["speed": 12])
            islet.clock.advance(by: 1)
            let started = try await islet.request(
                .POST, "/v1/activities", key: bike,
                body: #"{"attributesType":"RideAttributes","attributes":{},"content":{"state":{"speed":30},"relevanceScore":80}}"#
            )
            let high = try #require(started.json["id"]?.stringValue)
            islet.clock.advance(by: 1)
            let ended = try await islet.start(key: bike, state: ["speed": 5])
            #expect(try await islet.request(.POST, "/v1/activities/\(ended.id)/end", key: bike, body: "{}").status == 200)
            let gone = try await islet.start(key: bike, state: ["speed": 1])
            #expect(try await islet.request(.POST, "/v1/activities/\(gone.id)/end", key: bike, body: #"{"dismissalPolicy":"immediate"}"#).status == 200)
            _ = try await islet.request(.POST, "/v1/devices", key: islet.admin, body: #"{"id":"kitchen"}"#)
            _ = try await islet.start(key: bike, extra: #","device":"kitchen""#)

            let snapshot = try await islet.request(.GET, "/v1/devices/default/display")
            #expect(snapshot.status == 200)
            guard case .array(let shown) = snapshot.json["activities"] else {
                Issue.record("no activities in \(snapshot.text)")
                return
            }
            #expect(shown.compactMap { $0["id"]?.stringValue } == [high, low.id, ended.id])
            #expect(shown.compactMap { $0["state"]?.stringValue } == ["active", "active", "ended"])
            let frames = try #require(shown.first?["frames"])
            #expect(frames["lockScreen"]?.stringValue?.hasPrefix(#"<section class="islet-card""#) == true)
            #expect(frames["lockScreen"]?.stringValue?.contains(">30<") == true)
            for kind in ["compact", "minimal", "expanded"] {
                #expect(frames[kind]?.stringValue?.contains(#"data-kind="\#(kind)""#) == true, "\(kind)")
            }
            #expect(shown.first?["appName"] == "com.example.bike")
            #expect(snapshot.json["apps"] == [["bundleId": "com.example.bike", "name": "com.example.bike", "activitiesEnabled": true, "frequentUpdates": false]])
            #expect(snapshot.json["device"]?["id"] == "default")
            guard case .integer(let lastEvent) = snapshot.json["eventId"] else {
                Issue.record("no eventId in \(snapshot.text)")
                return
            }
            #expect(lastEvent > 0)
            #expect(try await islet.request(.GET, "/v1/devices/nope/display").reason == "deviceNotFound")
        }
    }

    @Test func onLoopbackADisplayNeedsNoKeyButAnAppKeyIsNotADisplay() async throws {
        try await withIslet { islet in
            let bike = try await islet.createApp("com.example.bike")
            let activity = try await islet.start(key: bike)
            // No key: dismiss, settings and the device's stream, as a display does.
            #expect(try await islet.request(.GET, "/v1/devices/default/settings").status == 200)
            let settings = try await islet.request(
                .PUT, "/v1/devices/default/settings", body: #"{"bundleId":"com.example.bike","frequentUpdates":true}"#
            )
            #expect(settings.json["frequentUpdates"] == true)
            #expect(try await islet.request(.POST, "/v1/activities/\(activity.id)/dismiss", body: "{}").json["activityState"] == "dismissed")
            let stream = try await SSE.read(islet, key: nil, path: "/v1/events?device=default&since=0", until: "dismissed")
            #expect(stream.text.contains("event: stateChanged"))
            // Without a device, a keyless stream is the console's: every app's, without tokens.
            let console = try await SSE.read(islet, key: nil, path: "/v1/events?since=0", until: "dismissed")
            #expect(console.text.contains("event: started") && !console.text.contains("pushToken"))
            // The console reads without a key; starting and managing still need one.
            #expect(try await islet.request(.GET, "/v1/activities").status == 200)
            #expect(try await islet.request(.POST, "/v1/activities", body: "{}").reason == "unauthorized")
            #expect(try await islet.request(.POST, "/v1/apps", body: #"{"bundleId":"com.example.x"}"#).reason == "unauthorized")
            #expect(try await islet.request(.POST, "/v1/apps/com.example.bike/key", body: "{}").reason == "unauthorized")
            // The console's actions: pausing an app's delivery, sending a delivery again.
            let paused = try await islet.request(.PATCH, "/v1/apps/com.example.bike", body: #"{"deliveryPaused":true}"#)
            #expect(paused.json["deliveryPaused"] == true)
            #expect(try await islet.request(.PATCH, "/v1/apps/com.example.bike", body: #"{"strictPushes":true}"#, headers: [("Origin", "https://evil.example")]).reason == "forbidden")
            #expect(try await islet.request(.POST, "/v1/deliveries/1/retry", body: "{}").reason == "deliveryNotFound")
            // An app key acts for its app, not as a display.
            let other = try await islet.start(key: bike)
            #expect(try await islet.request(.POST, "/v1/activities/\(other.id)/dismiss", key: bike).reason == "forbidden")
            #expect(try await islet.request(.GET, "/v1/devices/default/display", key: bike).reason == "forbidden")
        }
    }

    @Test func offLoopbackADisplayNeedsItsDevicesKey() async throws {
        try await withIslet({ $0.server.host = "0.0.0.0" }) { islet in
            let bike = try await islet.createApp("com.example.bike")
            let activity = try await islet.start(key: bike)
            let refused = try await islet.request(.GET, "/v1/devices/default/display")
            #expect(refused.reason == "unauthorized")
            #expect(refused.json["error"]?["message"]?.stringValue?.contains("islet devices key default") == true)
            #expect(try await islet.request(.POST, "/v1/activities/\(activity.id)/dismiss").reason == "unauthorized")
            #expect(try await islet.request(.GET, "/v1/events?device=default").reason == "unauthorized")

            // Only the admin issues a device key; it is shown once.
            #expect(try await islet.request(.POST, "/v1/devices/default/key", key: bike).reason == "forbidden")
            let issued = try await islet.request(.POST, "/v1/devices/default/key", key: islet.admin)
            #expect(issued.status == 201)
            let key = try #require(issued.json["key"]?.stringValue)
            #expect(key.hasPrefix("islet_device_"))
            #expect(try await islet.request(.GET, "/v1/devices/default/display", key: key).status == 200)
            #expect(try await islet.request(.GET, "/v1/devices/default/settings", key: key).status == 200)

            // A device key is a display's, nothing more.
            _ = try await islet.request(.POST, "/v1/devices", key: islet.admin, body: #"{"id":"kitchen"}"#)
            #expect(try await islet.request(.GET, "/v1/devices/kitchen/display", key: key).reason == "forbidden")
            #expect(try await islet.request(.GET, "/v1/activities", key: key).reason == "forbidden")
            #expect(try await islet.request(.POST, "/v1/activities", key: key, body: #"{"bundleId":"com.example.bike"}"#).reason == "forbidden")
            #expect(try await islet.request(.POST, "/v1/activities/\(activity.id)/update", key: key, body: "{}").reason == "forbidden")
            #expect(try await islet.request(.GET, "/v1/events?device=kitchen", key: key).reason == "forbidden")
            let kitchenActivity = try await islet.start(key: bike, extra: #","device":"kitchen""#)
            // Another device's activity is not found, as another app's is for an app's key.
            #expect(try await islet.request(.POST, "/v1/activities/\(kitchenActivity.id)/dismiss", key: key).reason == "activityNotFound")
            #expect(try await islet.request(.POST, "/v1/activities/\(activity.id)/dismiss", key: key).json["activityState"] == "dismissed")
            let stream = try await SSE.read(islet, key: key, path: "/v1/events?since=0", until: "dismissed")
            #expect(!stream.text.contains(kitchenActivity.id))

            // A new key replaces the old one at once.
            let replacement = try #require(try await islet.request(.POST, "/v1/devices/default/key", key: islet.admin).json["key"]?.stringValue)
            #expect(try await islet.request(.GET, "/v1/devices/default/display", key: key).reason == "unauthorized")
            #expect(try await islet.request(.GET, "/v1/devices/default/display", key: replacement).status == 200)
            #expect(try await islet.request(.POST, "/v1/devices/nope/key", key: islet.admin).reason == "deviceNotFound")
        }
    }
}
