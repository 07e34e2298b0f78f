import Foundation
import IsletCore
import Testing

/// What a webhook event says of the event of the log it comes from (docs/webhooks.md, "Events").
struct WebhookEventTests {
    private func event(_ type: EventType, _ data: JSONValue, activity: ActivityID? = "A1") -> Event {
        Event(id: 42, type: type, time: Date(timeIntervalSince1970: 1_795_240_458), bundleId: "com.example.rides", deviceId: "default", activityId: activity, data: data)
    }

    private func body(_ made: WebhookEvent?) throws -> JSONValue {
        try WireFormat.decoder().decode(JSONValue.self, from: Data(try #require(made).body.utf8))
    }

    @Test func aTokenSaysWhichKindItIs() throws {
        let update = try body(WebhookEvent.make(from: event(.pushTokenUpdated, ["pushToken": "ab12", "kind": "activity"]), activity: nil))
        #expect(update["type"] == "token.updated" && update["data"]?["kind"] == "update" && update["data"]?["activityId"] == "A1")
        let pushToStart = try body(WebhookEvent.make(
            from: event(.pushTokenUpdated, ["pushToken": "ab12", "kind": "pushToStart"], activity: nil), activity: nil
        ))
        #expect(pushToStart["data"]?["kind"] == "push-to-start" && pushToStart["data"]?["activityId"] == nil)
        #expect(pushToStart["data"]?["deviceId"] == "default")
        // The token itself is not in the webhook.
        #expect(!(try #require(WebhookEvent.make(from: event(.pushTokenUpdated, ["pushToken": "ab12cd", "kind": "activity"]), activity: nil)).body.contains("ab12cd")))
    }

    @Test func theEnvelopeIsTheSameForEveryType() throws {
        let made = try body(WebhookEvent.make(from: event(.stateChanged, ["from": "active", "to": "ended", "reason": "endedByApp", "at": 1795240458]), activity: nil))
        #expect(made["id"] == "evt_42" && made["type"] == "activity.ended" && made["version"] == 1 && made["bundleId"] == "com.example.rides")
        #expect(made["createdAt"]?.stringValue?.hasPrefix("2026-11-") == true)
        #expect(made["data"]?["by"] == "app")
        // Events that make no webhook.
        #expect(WebhookEvent.make(from: event(.alert, ["title": "x"]), activity: nil) == nil)
        #expect(WebhookEvent.make(from: event(.stateChanged, ["from": "pending", "to": "active", "reason": "scheduledStart", "at": 1795240458]), activity: nil) == nil)
    }
}
