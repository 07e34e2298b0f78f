import Foundation
import IsletCore
import Testing

/// `EventCounts`: the overview's totals, counted from the events the stream carries.
@Suite("Event counts")
struct EventCountsTests {
    @Test func updatesDropsRequestsToAppleAndItsAnswersAreCounted() throws {
        var counts = EventCounts(since: Date(timeIntervalSince1970: 1_700_000_000))
        let events: [(EventType, String)] = [
            (.started, #"{}"#),
            (.contentUpdated, #"{}"#),
            (.contentUpdated, #"{}"#),
            (.updateIgnored, #"{"reason":"olderTimestamp","message":"older"}"#),
            (.updateIgnored, #"{"reason":"budgetExceeded","message":"over"}"#),
            (.updateIgnored, #"{"reason":"olderTimestamp","message":"older"}"#),
            // Decisions without a request to Apple are not requests.
            (.delivery, #"{"delivery":1,"event":"update","outcome":"queued","attempt":0}"#),
            (.delivery, #"{"delivery":1,"event":"update","outcome":"held","attempt":0}"#),
            (.delivery, #"{"delivery":1,"event":"update","outcome":"retrying","attempt":1,"status":500,"reason":"InternalServerError"}"#),
            (.delivery, #"{"delivery":1,"event":"update","outcome":"retrying","attempt":2}"#),
            (.delivery, #"{"delivery":1,"event":"update","outcome":"delivered","attempt":3,"status":200}"#),
        ]
        for (index, (type, data)) in events.enumerated() {
            counts.count(EncodedEvent(
                id: EventID(index + 1), type: type, time: Date(), bundleId: "com.example.ci", deviceId: "default", activityId: "a", dataJSON: data
            ))
        }
        #expect(counts.updates == 2)
        #expect(counts.dropped == ["olderTimestamp": 2, "budgetExceeded": 1])
        #expect(counts.pushes == 3)
        #expect(counts.answers == ["500": 1, "none": 1, "200": 1])

        var other = EventCounts(since: Date(timeIntervalSince1970: 1_600_000_000))
        other.updates = 5
        other.answers = ["200": 4]
        counts.add(other)
        #expect(counts.since == Date(timeIntervalSince1970: 1_600_000_000))
        #expect(counts.updates == 7 && counts.answers == ["500": 1, "none": 1, "200": 5])
    }
}
