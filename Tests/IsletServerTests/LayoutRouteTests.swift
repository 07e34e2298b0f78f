import Foundation
import IsletClient
import IsletCore
import IsletServer
import IsletTestSupport
import Testing

@Suite("Layout and presentation routes", .hangDetector)
struct LayoutRouteTests {
    let rideLayout = #"""
        {"lockScreen": {"type": "HStack", "children": [
           {"type": "Image", "systemName": "bicycle"},
           {"type": "Text", "text": {"bind": "state.speed", "format": {"number": {"precision": 1, "unit": "km/h"}}}}]},
         "dynamicIsland": {"compactTrailing": {"type": "Text", "text": {"bind": "state.speed", "format": "number"}}}}
        """#

    @Test func anActivityIsDrawnWithTheDefaultCardUntilItsTypeHasALayout() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.bike")
            let activity = try await islet.start(key: key, state: ["speed": 21.25])
            let before = try await islet.request(.GET, "/v1/activities/\(activity.id)/presentation", key: key)
            #expect(before.status == 200)
            #expect(before.json["lockScreen"]?.stringValue?.contains(">Ride<") == true)
            #expect(try await islet.request(.GET, "/v1/apps/com.example.bike/layouts/RideAttributes", key: key).reason == "layoutNotFound")

            let put = try await islet.request(.PUT, "/v1/apps/com.example.bike/layouts/RideAttributes", key: key, body: rideLayout)
            #expect(put.status == 201)
            #expect(put.json["revision"] == 1)
            let after = try await islet.request(.GET, "/v1/activities/\(activity.id)/presentation", key: key)
            // 21.25 to one decimal is 21.2: half to even, as NumberFormatter rounds.
            #expect(after.json["lockScreen"]?.stringValue?.contains(">21.2 km/h<") == true)
            #expect(after.json["compactTrailing"]?.stringValue?.contains(">21.25<") == true)
            #expect(after.json["minimal"] == "")

            // An update is drawn at once; the layout's registration told the activity's displays.
            _ = try await islet.request(.POST, "/v1/activities/\(activity.id)/update", key: key, body: #"{"content": {"state": {"speed": 30}}}"#)
            let updated = try await islet.request(.GET, "/v1/activities/\(activity.id)/presentation", key: key)
            #expect(updated.json["lockScreen"]?.stringValue?.contains(">30.0 km/h<") == true)
            let history = try await islet.isletClient(key: key).history(activity.id)
            #expect(history.contains { $0.type == .layoutChanged && $0.data["revision"] == 1 && $0.data["attributesType"] == "RideAttributes" })

            let replaced = try await islet.request(.PUT, "/v1/apps/com.example.bike/layouts/RideAttributes", key: key, body: rideLayout)
            #expect(replaced.status == 200 && replaced.json["revision"] == 2)
            let listed = try await islet.request(.GET, "/v1/apps/com.example.bike/layouts", key: key)
            #expect(listed.json["layouts"] == .array([replaced.json]))
            #expect(try await islet.request(.DELETE, "/v1/apps/com.example.bike/layouts/RideAttributes", key: key).status == 204)
            let again = try await islet.request(.GET, "/v1/activities/\(activity.id)/presentation", key: key)
            #expect(again.json["lockScreen"]?.stringValue?.contains(">Ride<") == true)
            #expect(try await islet.request(.DELETE, "/v1/apps/com.example.bike/layouts/RideAttributes", key: key).reason == "layoutNotFound")
        }
    }

    /// Issue 27: a state missing a field the layout binds drew an almost empty card and said
    /// nothing. It still draws, and its presentation says what was missing and where.
    @Test func aStateThatDoesNotFitTheLayoutIsDrawnWithWarnings() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.bike")
            _ = try await islet.request(.PUT, "/v1/apps/com.example.bike/layouts/RideAttributes", key: key, body: rideLayout)
            let activity = try await islet.start(key: key, state: ["distance": 12])
            let drawn = try await islet.request(.GET, "/v1/activities/\(activity.id)/presentation", key: key)
            #expect(drawn.status == 200)
            #expect(
                drawn.json["warnings"] == [
                    [
                        "region": "lockScreen", "path": "lockScreen.children[1].text", "binding": "state.speed", "problem": "missing",
                        "message": "state.speed is missing",
                    ],
                    [
                        "region": "compactTrailing", "path": "dynamicIsland.compactTrailing.text", "binding": "state.speed",
                        "problem": "missing", "message": "state.speed is missing",
                    ],
                ]
            )
            let first = try #require(try await islet.isletClient(key: key).history(activity.id).first?.id)
            _ = try await islet.request(.POST, "/v1/activities/\(activity.id)/update", key: key, body: #"{"content": {"state": {"speed": "fast"}}}"#)
            let wrong = try await islet.request(.GET, "/v1/activities/\(activity.id)/presentation", key: key)
            #expect(Self.messages(wrong.json) == ["state.speed is a string, not a number", "state.speed is a string, not a number"])
            _ = try await islet.request(.POST, "/v1/activities/\(activity.id)/update", key: key, body: #"{"content": {"state": {"speed": 30}}}"#)
            #expect(try await islet.request(.GET, "/v1/activities/\(activity.id)/presentation", key: key).json["warnings"] == [])
            // The console's view of the past: the start's state, with its warnings.
            let then = try await islet.request(.GET, "/v1/activities/\(activity.id)/presentation?at=\(first)", key: key)
            #expect(Self.messages(then.json) == ["state.speed is missing", "state.speed is missing"])
        }
    }

    /// The warnings' messages of a presentation.
    static func messages(_ presentation: JSONValue) -> [String]? {
        guard case .array(let warnings)? = presentation["warnings"] else { return nil }
        return warnings.compactMap { $0["message"]?.stringValue }
    }

    @Test func anInvalidLayoutIsRefusedWithThePathAndChangesNothing() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.bike")
            let bad = try await islet.request(
                .PUT, "/v1/apps/com.example.bike/layouts/RideAttributes", key: key,
                body: #"{"lockScreen": {"type": "VStack", "children": [{"type": "Text", "text": "a", "modifiers": [{"font": {"weight": "heavyish"}}]}]}}"#
            )
            #expect(bad.status == 400)
            #expect(bad.reason == "invalidLayout")
            #expect(bad.json["error"]?["message"]?.stringValue?.hasPrefix("lockScreen.children[0].modifiers[0].font.weight:") == true)
            #expect(try await islet.request(.PUT, "/v1/apps/com.example.bike/layouts/RideAttributes", key: key, body: "{nope").reason == "malformedJSON")
            let huge = #"{"lockScreen": {"type": "Text", "text": "\#(String(repeating: "x", count: 70_000))"}}"#
            #expect(try await islet.request(.PUT, "/v1/apps/com.example.bike/layouts/RideAttributes", key: key, body: huge).reason == "payloadTooLarge")
            #expect(try await islet.request(.GET, "/v1/apps/com.example.bike/layouts", key: key).json["layouts"] == [])
        }
    }

    @Test func anAppCannotDrawOrLayOutAnotherAppsActivities() async throws {
        try await withIslet { islet in
            let bike = try await islet.createApp("com.example.bike")
            let ci = try await islet.createApp("com.example.ci")
            let activity = try await islet.start(key: bike)
            #expect(try await islet.request(.GET, "/v1/activities/\(activity.id)/presentation", key: ci).reason == "activityNotFound")
            #expect(try await islet.request(.PUT, "/v1/apps/com.example.bike/layouts/RideAttributes", key: ci, body: rideLayout).reason == "forbidden")
            // Without a key from another site's page: refused (the console's keyless reads are for this machine's own pages).
            #expect(try await islet.request(.GET, "/v1/activities/\(activity.id)/presentation", headers: [("Origin", "https://evil.example")]).reason == "forbidden")
        }
    }

    @Test func theLimitIsTheCompactDocumentsNotTheIndentations() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.ci")
            let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .appendingPathComponent("../../Examples/Layouts/ci-build/layout.json").standardized
            // The shipped layout, indented far beyond 64 KiB: accepted, as its content fits.
            let indented = try String(contentsOf: file, encoding: .utf8).replacingOccurrences(of: "\n", with: "\n" + String(repeating: " ", count: 40))
            #expect(indented.utf8.count > 65_536)
            let put = try await islet.request(.PUT, "/v1/apps/com.example.ci/layouts/StatusAttribute", key: key, body: indented)
            #expect(put.status == 201, "\(put.text.prefix(300))")
            // Content beyond 64 KiB is refused however it is written.
            let big = #"{"lockScreen": {"type": "Text", "text": "\#(String(repeating: "x", count: 70_000))"}}"#
            let refused = try await islet.request(.PUT, "/v1/apps/com.example.ci/layouts/Big", key: key, body: big)
            #expect(refused.status == 413)
            #expect(refused.reason == "payloadTooLarge")
        }
    }
}
