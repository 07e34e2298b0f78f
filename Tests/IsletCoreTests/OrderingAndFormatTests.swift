import Foundation
import IsletCore
import Testing

@Suite("Relevance and wire format")
struct OrderingAndFormatTests {
    @Test func highestRelevanceLeadsThenEarliestStart() throws {
        let early = try started(request(content(1, relevance: 50)), now: at(0), id: "early")
        let late = try started(request(content(1, relevance: 50)), now: at(10), id: "late")
        let top = try started(request(content(1, relevance: 100)), now: at(20), id: "top")
        let none = try started(request(content(1)), now: at(5), id: "none")
        #expect([none, late, top, early].sortedByRelevance().map(\.id) == ["top", "early", "late", "none"])
    }

    @Test func timesAreUnixSecondsOnTheWire() throws {
        let activity = try started(request(content(1, staleDate: at(60))))
        let json = try WireFormat.string(activity)
        #expect(json.contains("\"staleDate\":1700000060"))
        #expect(json.contains("\"createdAt\":1700000000"))
        #expect(json.contains("\"activityState\":\"active\""))
    }

    @Test func activityRoundTripsThroughJSON() throws {
        var activity = try started(request(content(1, staleDate: at(60)), pushType: .token))
        _ = try activity.handle(.end(EndRequest(dismissalPolicy: .after(at(600)))), now: at(30), rules: LifecycleRules())
        let decoded = try WireFormat.decoder().decode(Activity.self, from: Data(WireFormat.string(activity).utf8))
        #expect(decoded == activity)
    }

    @Test func integersStayIntegersAndKeysAreSorted() throws {
        let value: JSONValue = ["b": 1, "a": 1.5, "c": ["x": true, "n": nil]]
        #expect(try WireFormat.string(value) == #"{"a":1.5,"b":1,"c":{"n":null,"x":true}}"#)
        let decoded = try WireFormat.decoder().decode(JSONValue.self, from: Data(#"{"i":3,"d":3.25,"t":true}"#.utf8))
        #expect(decoded == ["i": 3, "d": 3.25, "t": true])
    }

    @Test func dismissalPolicyWireForms() throws {
        let decoder = WireFormat.decoder()
        #expect(try decoder.decode(DismissalPolicy.self, from: Data(#""default""#.utf8)) == .default)
        #expect(try decoder.decode(DismissalPolicy.self, from: Data(#""immediate""#.utf8)) == .immediate)
        #expect(try decoder.decode(DismissalPolicy.self, from: Data(#"{"after":1700000060}"#.utf8)) == .after(at(60)))
        #expect(throws: DecodingError.self) { try decoder.decode(DismissalPolicy.self, from: Data(#""later""#.utf8)) }
    }

    @Test func scriptingDismissTimeIntervalMapsToPolicies() {
        #expect(DismissalPolicy.fromDismissTimeInterval(nil, now: t0) == .default)
        #expect(DismissalPolicy.fromDismissTimeInterval(0, now: t0) == .immediate)
        #expect(DismissalPolicy.fromDismissTimeInterval(-5, now: t0) == .immediate)
        #expect(DismissalPolicy.fromDismissTimeInterval(90, now: t0) == .after(at(90)))
    }

    @Test func encodedEventIsValidJSONWithItsData() throws {
        let event = EncodedEvent(
            id: 7, type: .alert, time: at(0.5), bundleId: "com.example.\"quoted\"", deviceId: "default",
            activityId: "A", dataJSON: #"{"title":"t","body":"b"}"#
        )
        let decoded = try event.decoded()
        #expect(decoded.id == 7)
        #expect(decoded.bundleId == "com.example.\"quoted\"")
        #expect(decoded.data == ["title": "t", "body": "b"])
        #expect(decoded.time == at(0.5))
    }

    @Test func durationsReadAsPeopleWriteThem() {
        #expect(DurationText.seconds("8h") == 8 * hour)
        #expect(DurationText.seconds("4h30m") == 4.5 * hour)
        #expect(DurationText.seconds("90") == 90)
        #expect(DurationText.seconds("15s") == 15)
        #expect(DurationText.seconds("2x") == nil)
        #expect(DurationText.seconds("5h3") == nil)
        #expect(DurationText.text(4.5 * hour) == "4h30m")
    }

    @Test func bundleIdentifiersAreValidated() {
        #expect(throws: Never.self) { try App.validate(bundleId: "com.example.bike-2") }
        #expect(throws: IsletError.self) { try App.validate(bundleId: "com/example") }
        #expect(throws: IsletError.self) { try App.validate(bundleId: "") }
        #expect(throws: IsletError.self) { try App.validate(bundleId: ".com") }
    }
}
