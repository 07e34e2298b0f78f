import Foundation
import IsletCore
import Testing

/// `data.islet` as an Android phone reads it (docs/android.md's contract): the same payload an
/// iPhone's push becomes, or a drop with its reason — never a failure, since FCM took it.
@Suite("Android: data.islet read by the phone")
struct IsletDataTests {
    let now = 1_800_000_000

    @Test func aStartCarriesTheActivityItsTagAndItsDates() throws {
        let read = IsletData.read(
            #"{"event": "start", "activityId": "ride-1", "attributesType": "RideAttributes", "attributes": {"to": "Gare du Nord"}, "contentState": {"eta": 12}, "timestamp": \#(now), "staleDate": \#(now + 600), "relevanceScore": 50, "alert": {"title": "Ride", "body": "On its way"}, "notification": {"title": "Ride"}}"#,
            device: "pixel"
        )
        #expect(read.tag == "ride-1")
        guard case .start(let start) = read.payload.action else { Issue.record("\(read.payload.action)"); return }
        #expect(start.request.attributesType == "RideAttributes" && start.request.deviceId == "pixel")
        #expect(start.request.attributes == ["to": "Gare du Nord"] && start.request.content.state == ["eta": 12])
        #expect(start.request.content.staleDate == Date(timeIntervalSince1970: Double(now + 600)))
        #expect(start.request.content.relevanceScore == 50 && start.request.alert?.title == "Ride")
        #expect(start.timestamp == Date(timeIntervalSince1970: Double(now)))
    }

    @Test func anUpdateAndAnEndAreOrderedByTheirTimestamp() throws {
        let update = IsletData.read(#"{"event": "update", "activityId": "r", "contentState": {"eta": 4}, "timestamp": \#(now)}"#, device: "pixel")
        guard case .update(let change) = update.payload.action else { Issue.record("\(update.payload.action)"); return }
        #expect(change.timestamp == Date(timeIntervalSince1970: Double(now)) && change.content.state == ["eta": 4])
        let end = IsletData.read(
            #"{"event": "end", "activityId": "r", "contentState": {"eta": 0}, "timestamp": \#(now), "dismissalDate": \#(now + 60)}"#, device: "pixel"
        )
        guard case .end(let ending) = end.payload.action else { Issue.record("\(end.payload.action)"); return }
        #expect(ending.dismissalPolicy == .after(Date(timeIntervalSince1970: Double(now + 60))))
    }

    @Test(arguments: [
        (#"not json"#, "not a JSON object"),
        (#"{"event": "update", "contentState": {}, "timestamp": 1800000000}"#, "activityId is missing"),
        (#"{"event": "update", "activityId": "r", "contentState": {}}"#, "timestamp is missing"),
        (#"{"event": "update", "activityId": "r", "contentState": [], "timestamp": 1800000000}"#, "contentState must be an object"),
        (#"{"event": "update", "activityId": "r", "contentState": {}, "timestamp": 1e300}"#, "timestamp must be a date"),
        (#"{"event": "start", "activityId": "r", "contentState": {}, "timestamp": 1800000000}"#, "attributesType"),
        (#"{"event": "pause", "activityId": "r", "contentState": {}, "timestamp": 1800000000}"#, "not start, update or end"),
        (#"{"event": "update", "activityId": "r", "contentState": {}, "timestamp": 1800000000, "alert": "hi"}"#, "alert must be an object"),
    ])
    func whatBreaksTheContractIsDroppedWithItsReason(text: String, reason: String) {
        guard case .undeliverable(let why, let detail) = IsletData.read(text, device: "pixel").payload.action else {
            Issue.record("\(text) was taken")
            return
        }
        #expect(why == .invalidPayload && detail.contains(reason), "\(detail)")
    }
}
