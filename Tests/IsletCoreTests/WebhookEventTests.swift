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

    /// A real phone's tokens, as its app reports them, say so; a push-to-start one its type.
    @Test func aReportedTokenSaysSoAndItsKind() throws {
        for (kind, said) in [("phoneUpdate", "update"), ("phonePushToStart", "push-to-start"), ("fcm", "fcm")] {
            let made = try body(WebhookEvent.make(
                from: event(.pushTokenUpdated, ["pushToken": "ab12cd", "kind": .string(kind), "attributesType": "RideAttributes"]), activity: nil
            ))
            #expect(made["data"]?["kind"] == .string(said) && made["data"]?["reported"] == true, "\(kind)")
            #expect(made["data"]?["attributesType"] == "RideAttributes" && made["data"]?["token"] == nil)
        }
        let issued = try body(WebhookEvent.make(from: event(.pushTokenUpdated, ["pushToken": "ab12", "kind": "activity"]), activity: nil))
        #expect(issued["data"]?["reported"] == false)
    }

    /// How an activity started, and who ended it on the phone.
    @Test func aStartSaysHowAndAnEndOnThePhoneSaysPhone() throws {
        var activity = Activity(
            id: "A1", bundleId: "com.example.rides", deviceId: "default", attributesType: "RideAttributes", attributes: [:],
            content: ActivityContent(state: [:]), state: .active, createdAt: Date(timeIntervalSince1970: 1_795_240_458)
        )
        let started = event(.started, try WireFormat.decoder().decode(JSONValue.self, from: Data(try WireFormat.string(activity).utf8)))
        #expect(try body(WebhookEvent.make(from: started, activity: activity))["data"]?["source"] == "api")
        for source in ActivitySource.allCases {
            activity.source = source
            #expect(try body(WebhookEvent.make(from: started, activity: activity))["data"]?["source"] == .string(source.rawValue))
        }
        let ended = event(.stateChanged, ["from": "active", "to": "ended", "reason": "endedOnPhone", "at": 1795240458])
        #expect(try body(WebhookEvent.make(from: ended, activity: nil))["data"]?["by"] == "phone")
        let dismissed = event(.stateChanged, ["from": "ended", "to": "dismissed", "reason": "userDismissed", "at": 1795240458])
        #expect(try body(WebhookEvent.make(from: dismissed, activity: nil))["data"]?["by"] == "person")
    }

    @Test func aSpentBudgetSaysWhatWasSpentAndWhenItComesBack() throws {
        let made = try body(WebhookEvent.make(
            from: event(.budgetExhausted, ["perHour": 12, "spent": 12, "nextRefillAt": 1795244058]), activity: nil
        ))
        #expect(made["type"] == "budget.exhausted" && made["data"]?["deviceId"] == "default" && made["data"]?["activityId"] == "A1")
        #expect(made["data"]?["budget"] == ["perHour": 12, "spent": 12, "nextRefillAt": 1795244058])
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
