import Foundation
import IsletCore
import IsletFCM
import IsletTestSupport
import Testing

@testable import IsletEngine

/// The FCM messages the engine will send to Android phones (`AndroidPayloads`): `data.islet` as
/// docs/android.md's contract says, and a message Islet playing Google (`FCMSendRequest`) takes —
/// the same 4,096-byte rule on both sides.
@Suite("Android payloads", .hangDetector)
struct AndroidPayloadTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000.6)

    func activity(attributes: JSONValue = ["destination": "Gare du Nord"]) -> Activity {
        Activity(
            id: "A1", bundleId: "com.example.rides", deviceId: "pixel", attributesType: "RideAttributes", attributes: attributes,
            content: ActivityContent(state: ["status": "Arriving"], staleDate: t0.addingTimeInterval(600), relevanceScore: 50),
            state: .active, createdAt: t0
        )
    }

    let notification = AndroidNotification(
        title: "Ride to Gare du Nord", text: "Arriving", shortCriticalText: "12m", progress: .init(value: 62, max: 100, segments: [.init(length: 100)])
    )

    @Test func anUpdateCarriesTheContractsMembersAndIsTakenAsFCMTakesIt() throws {
        let activity = activity()
        let islet = AndroidPayloads.islet(
            event: "end", activity: activity, content: activity.content, timestamp: t0, dismissal: t0.addingTimeInterval(3600),
            alert: Alert(title: "Arrived", body: "Your ride is here"), notification: notification
        )
        #expect(islet == [
            "event": "end", "activityId": "A1", "bundleId": "com.example.rides", "attributesType": "RideAttributes",
            "attributes": ["destination": "Gare du Nord"], "contentState": ["status": "Arriving"], "timestamp": 1_800_000_000,
            "staleDate": 1_800_000_600, "dismissalDate": 1_800_003_600, "relevanceScore": .number(50),
            "alert": ["title": "Arrived", "body": "Your ride is here"],
            "notification": [
                "title": "Ride to Gare du Nord", "text": "Arriving", "shortCriticalText": "12m",
                "progress": ["value": 62, "max": 100, "indeterminate": false, "segments": [["length": 100]], "points": []],
            ],
        ])
        let text = try AndroidPayloads.text(islet)
        let body = try WireFormat.string(AndroidPayloads.message(to: .token("fHk3:APA91b"), islet: text, activityId: "A1", ttl: 3599.9))
        let taken = try FCMSendRequest(body: Data(body.utf8))
        #expect(taken.message.target == .token("fHk3:APA91b"))
        #expect(taken.message.data == ["islet": text])
        #expect(taken.message.android.priority == .high)
        #expect(taken.message.android.collapseKey == "A1")
        #expect(taken.message.android.ttl == 3599)
    }

    @Test func aChangeTooBigForFCMIsRefusedHereAsFCMWouldRefuseIt() throws {
        // Find the largest attribute that fits, by the engine's rule; one byte more is refused
        // by the engine and, were it sent, by Islet playing Google.
        func islet(_ size: Int) -> JSONValue {
            AndroidPayloads.islet(
                event: "update", activity: activity(attributes: ["note": .string(String(repeating: "x", count: size))]),
                content: activity().content, timestamp: t0, notification: notification
            )
        }
        let base = try WireFormat.string(islet(0)).utf8.count + AndroidPayloads.key.utf8.count
        let fits = AndroidPayloads.maximumData - base
        let text = try AndroidPayloads.text(islet(fits))
        let message = try WireFormat.string(AndroidPayloads.message(to: .token("t"), islet: text, activityId: "A1", ttl: 60))
        #expect(throws: Never.self) { try FCMSendRequest(body: Data(message.utf8)) }

        let error = #expect(throws: IsletError.self) { try AndroidPayloads.text(islet(fits + 1)) }
        #expect(error?.reason == .payloadTooLarge)
        #expect(error?.message.contains("4097 bytes") == true, "\(error?.message ?? "")")
        let over = try WireFormat.string(islet(fits + 1))
        let refused = #expect(throws: FCMError.self) {
            try FCMSendRequest(body: Data(try WireFormat.string(AndroidPayloads.message(to: .token("t"), islet: over, activityId: "A1", ttl: 60)).utf8))
        }
        #expect(refused?.errorCode == .invalidArgument)
    }

    @Test func aTTLIsWholeSecondsWithinFCMsRange() throws {
        for (ttl, expected) in [(-5.0, "0s"), (0.5, "0s"), (90, "90s"), (1e300, "2419200s"), (.infinity, "0s"), (.nan, "0s")] {
            let message = AndroidPayloads.message(to: .token("t"), islet: "{}", activityId: "A1", ttl: ttl)
            #expect(message["message"]?["android"]?["ttl"] == .string(expected), "\(ttl)")
        }
    }
}
