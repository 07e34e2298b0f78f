import Foundation
import IsletCore
import Testing

/// A layout's `android` region (`AndroidLayout`): read and checked when the layout is stored,
/// with Android's limits as its rules, and drawn for one activity into the notification the
/// payload carries (`AndroidNotification`).
@Suite("Layouts: the Android notification")
struct AndroidLayoutTests {
    let now = 1_800_000_000.0

    func layout(_ android: String) throws -> Layout {
        try Layout.parse(try JSONDecoder().decode(JSONValue.self, from: Data(#"{"android": \#(android)}"#.utf8)))
    }

    func refusal(_ android: String) -> String? {
        do {
            _ = try layout(android)
            return nil
        } catch {
            return (error as? IsletError)?.message ?? "\(error)"
        }
    }

    func scope(_ state: JSONValue, attributes: JSONValue = ["destination": "Gare du Nord", "driver": "Ana"]) -> LayoutScope {
        LayoutScope(attributes: attributes, state: state, isStale: false, dateEncoding: .secondsSince1970)
    }

    static let ride = """
        {"title": ["Ride to ", {"bind": "attributes.destination"}],
         "text": {"bind": "state.status"},
         "subText": {"bind": "attributes.driver"},
         "shortCriticalText": {"bind": "state.eta", "format": {"duration": {"style": "abbreviated"}}},
         "progress": {"value": {"bind": "state.done"}, "max": 100,
                      "segments": [{"length": 50, "color": "green"}, {"length": 50, "color": "#FF950080"}],
                      "points": [{"position": 50, "color": {"light": "#112233", "dark": "#445566"}}]}}
        """

    @Test func aRideIsDrawnAsTheNotificationAndroidShows() throws {
        let android = try #require(try layout(Self.ride).android)
        let notification = android.notification(in: scope(["status": "Arriving", "eta": 720, "done": 62.7]), now: now)
        #expect(notification == AndroidNotification(
            title: "Ride to Gare du Nord", text: "Arriving", subText: "Ana", shortCriticalText: "12m",
            progress: .init(
                value: 62, max: 100, indeterminate: false,
                segments: [.init(length: 50, color: "#34C759"), .init(length: 50, color: "#FF950080")],
                points: [.init(position: 50, color: "#112233")]
            )
        ))
        // A missing binding leaves its text out; a title is always there.
        let bare = android.notification(in: scope([:], attributes: [:]), now: now)
        #expect(bare.title == "Ride to ")
        #expect(bare.text == nil && bare.shortCriticalText == nil)
        #expect(bare.progress?.value == 0)
    }

    @Test func boundNumbersOutOfRangeAreClampedOrLeftOutNeverHandedOn() throws {
        let android = try #require(try layout("""
            {"title": "Build", "progress": {"value": {"bind": "state.v"}, "max": {"bind": "state.max"},
             "segments": [{"length": {"bind": "state.a"}}, {"length": {"bind": "state.b"}}],
             "points": [{"position": {"bind": "state.p"}}, {"position": {"bind": "state.q"}}]}}
            """).android)
        let progress = try #require(android.notification(
            in: scope(["v": 1e300, "max": 0, "a": -5, "b": 3, "p": 1e300, "q": 1]), now: now
        ).progress)
        #expect(progress.max == 1, "a max below 1 is 1")
        #expect(progress.value == 1, "a value above max is max")
        #expect(progress.segments == [.init(length: 3, color: nil)])
        #expect(progress.points == [.init(position: 1, color: nil)])
        let indeterminate = try #require(try layout(#"{"title": "Build", "progress": {"indeterminate": {"bind": "state.waiting"}}}"#).android)
        #expect(indeterminate.notification(in: scope(["waiting": true]), now: now).progress?.indeterminate == true)
    }

    @Test func androidsLimitsAreTheLayoutsRules() {
        let segments = { (count: Int) in Array(repeating: #"{"length": 1}"#, count: count).joined(separator: ", ") }
        let points = { (count: Int) in Array(repeating: #"{"position": 1}"#, count: count).joined(separator: ", ") }
        let (eleven, ten, five, four) = (segments(11), segments(10), points(5), points(4))
        let cases: [(String, String)] = [
            (#"{"text": "x"}"#, "android.title: a Live Update needs a title"),
            (#"{"title": []}"#, "android.title: expected a value, or an array of one or more"),
            (#"{"title": "x", "colorized": true}"#, "android"),
            (#"{"title": "x", "progress": {"max": 10}}"#, "a progress bar has a value, or is indeterminate"),
            (#"{"title": "x", "progress": {"value": 1, "max": 0}}"#, "android.progress.max: expected a whole number from 1 to 1000000"),
            (#"{"title": "x", "progress": {"value": 1, "max": 2.5}}"#, "android.progress.max"),
            (#"{"title": "x", "progress": {"value": 1, "segments": [{"length": 0}]}}"#, "android.progress.segments[0].length"),
            (#"{"title": "x", "progress": {"value": 1, "max": 10, "points": [{"position": 11}]}}"#, "android.progress.points[0].position: expected a whole number from 0 to 10"),
            (#"{"title": "x", "progress": {"value": 1, "segments": [\#(eleven)]}}"#, "at most 10 segments, not 11"),
            (#"{"title": "x", "progress": {"value": 1, "points": [\#(five)]}}"#, "at most 4 points, not 5"),
            (#"{"title": "x", "progress": {"value": 1, "segments": [{"length": 1, "colour": "red"}]}}"#, "android.progress.segments[0]"),
            (##"{"title": "x", "progress": {"value": 1, "points": [{"position": 1, "color": "#GG0000"}]}}"##, "is not a color"),
        ]
        for (android, message) in cases {
            let refused = refusal(android)
            #expect(refused?.contains(message) == true, "\(android): \(refused ?? "accepted")")
        }
        #expect(refusal(#"{"title": "x", "progress": {"value": 1, "segments": [\#(ten)], "points": [\#(four)]}}"#) == nil)
    }

    @Test func aTypeWithoutAnAndroidRegionGetsTheDefaultCardsWords() {
        let android = Layout.defaultAndroid(attributesType: "RideActivityAttributes", state: ["status": "Arriving", "etaMinutes": 12, "zone": "C"])
        let notification = android.notification(in: scope(["status": "Arriving", "etaMinutes": 12, "zone": "C"]), now: now)
        #expect(notification.title == "Ride")
        #expect(notification.text == "Eta minutes 12 · Status Arriving")
        #expect(notification.progress == nil)
    }
}
