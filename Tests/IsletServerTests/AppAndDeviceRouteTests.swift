import Foundation
import IsletClient
import IsletCore
import IsletServer
import IsletTestSupport
import Testing

@Suite("App and device routes", .hangDetector)
struct AppAndDeviceRouteTests {
    @Test func createdAppKeyIsShownOnceAndWorks() async throws {
        try await withIslet { islet in
            let created = try await islet.request(.POST, "/v1/apps", key: islet.admin, body: #"{"bundleId":"com.example.bike","name":"Bike computer"}"#
            )
            #expect(created.status == 201)
            #expect(created.json["app"]?["name"] == "Bike computer")
            let key = try #require(created.json["apiKey"]?.stringValue)
            #expect(key.hasPrefix("islet_app_"))
            let listed = try await islet.request(.GET, "/v1/apps", key: islet.admin)
            #expect(listed.json == [
                "apps": [["bundleId": "com.example.bike", "name": "Bike computer", "createdAt": 1_700_000_000, "strictPushes": false, "deliveryPaused": false]]
            ])
            #expect(!String(describing: listed.json).contains(key))
            let own = try await islet.request(.GET, "/v1/apps", key: key)
            #expect(own.json["apps"] == listed.json["apps"])
            #expect(try await islet.request(.GET, "/v1/apps/com.example.bike", key: key).status == 200)
        }
    }

    @Test func appKeySeesOnlyItsOwnApp() async throws {
        try await withIslet { islet in
            let bike = try await islet.createApp("com.example.bike")
            _ = try await islet.createApp("com.example.ci")
            let apps = try await islet.isletClient(key: bike).apps()
            #expect(apps.map(\.bundleId) == ["com.example.bike"])
            let other = try await islet.request(.GET, "/v1/apps/com.example.ci", key: bike)
            #expect(other.reason == "appNotFound")
        }
    }

    @Test func devicesAndTheirSettings() async throws {
        try await withIslet { islet in
            let bike = try await islet.createApp("com.example.bike")
            _ = try await islet.createApp("com.example.ci")
            let admin = islet.isletClient(key: islet.admin)
            let device = try await admin.createDevice(id: "phone-2", name: "Second phone")
            #expect(device.name == "Second phone")
            #expect(try await admin.devices().map(\.id) == ["default", "phone-2"])
            #expect(try await islet.isletClient(key: bike).devices().count == 2)

            let defaults = try await admin.settings(device: "phone-2")
            #expect(defaults.map(\.bundleId) == ["com.example.bike", "com.example.ci"])
            #expect(defaults.allSatisfy { $0.activitiesEnabled && !$0.frequentUpdates && $0.pushToStartToken?.count == 64 })
            let changed = try await admin.updateSettings(device: "phone-2", bundleId: "com.example.bike", frequentUpdates: true)
            #expect(changed == AppSettings(
                bundleId: "com.example.bike", deviceId: "phone-2", frequentUpdates: true, pushToStartToken: defaults[0].pushToStartToken
            ))
            // An app key sees its own settings only.
            #expect(try await islet.isletClient(key: bike).settings(device: "phone-2") == [changed])
            let noApp = try await islet.request(.PUT, "/v1/devices/phone-2/settings", key: islet.admin, body: #"{"frequentUpdates":true}"#)
            #expect(noApp.reason == "invalidRequest")
        }
    }

    @Test func producersLearnOfSettingsChangesAndDismissals() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.bike")
            let activity = try await islet.start(key: key)
            let stream = try await islet.isletClient(key: key).events()
            _ = try await islet.isletClient(key: islet.admin).updateSettings(
                device: "default", bundleId: "com.example.bike", activitiesEnabled: false
            )
            let events = try await within { try await collect(stream, count: 3) }
            #expect(events.map(\.type) == [.settingsChanged, .stateChanged, .stateChanged])
            #expect(events[0].data["activitiesEnabled"] == false)
            #expect(events[0].activityId == nil)
            #expect(events[2].activityId == activity.id)
            #expect(events[2].data["reason"] == "appDisabled")
        }
    }
}
