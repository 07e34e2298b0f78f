import Foundation
import IsletCore
import IsletRender
import Testing

/// Anything a payload can carry is drawn, never trapped on: a content state's number reaches
/// dates, timers, durations and timed progress, and a huge one is drawn as missing.
@Suite("Hostile numbers")
struct HostileNumberTests {
    /// Every view and format that turns a state value into time.
    static let timeViews = [
        #"{"type": "Text", "text": {"bind": "state.n", "format": "duration"}}"#,
        #"{"type": "Text", "text": {"bind": "state.n", "format": {"duration": {"style": "abbreviated"}}}}"#,
        #"{"type": "Text", "text": {"bind": "state.n", "format": "date"}}"#,
        #"{"type": "Text", "text": {"bind": "state.n", "format": {"date": {"style": "dateTime"}}}}"#,
        #"{"type": "Text", "text": {"bind": "state.n", "format": "relative"}}"#,
        #"{"type": "Text", "date": {"bind": "state.n"}, "style": "timer"}"#,
        #"{"type": "Text", "date": {"bind": "state.n"}, "style": "relative"}"#,
        #"{"type": "Text", "date": {"bind": "state.n"}, "style": "offset"}"#,
        #"{"type": "Text", "date": {"bind": "state.n"}, "style": "date"}"#,
        #"{"type": "Text", "timerInterval": {"start": 0, "end": {"bind": "state.n"}}}"#,
        #"{"type": "Text", "timerInterval": {"start": {"bind": "state.n"}, "end": {"bind": "state.n"}}, "countsDown": false}"#,
        #"{"type": "ProgressView", "timerInterval": {"start": {"bind": "state.n"}, "end": 1795255300}}"#,
        #"{"type": "ProgressView", "value": {"bind": "state.n"}, "total": {"bind": "state.m"}}"#,
        #"{"type": "Text", "text": {"bind": "state.n", "format": {"number": {"precision": 2, "unit": "km"}}}}"#,
        #"{"type": "Text", "text": {"bind": "state.n", "format": {"percent": {"precision": 1}}}}"#,
        #"{"type": "Text", "text": {"bind": "state.n"}}"#,
    ]

    static let hostile: [JSONValue] = [
        .number(1e300), .number(-1e300), .number(9.3e15), .number(1e19), .number(-9.3e15), .number(1.7976931348623157e308),
        .number(-1.7976931348623157e308), .number(.leastNonzeroMagnitude), .integer(.max), .integer(.min), .number(253_402_300_800),
    ]

    @Test(arguments: timeViews)
    func hugeAndTinyNumbersAreDrawnNotTrappedOn(_ view: String) throws {
        for dateEncoding in ["secondsSince1970", "secondsSince2001", "millisecondsSince1970"] {
            for value in Self.hostile {
                let presentation = try render(view, state: ["n": value, "m": value], dateEncoding: dateEncoding)
                #expect(!presentation.lockScreen.isEmpty)
            }
        }
    }

    @Test func aDateBeyondTheYear9999IsDrawnAsMissing() throws {
        let far = try render(#"{"type": "Text", "text": {"bind": "state.n", "format": "date"}}"#, state: ["n": 1e300])
        #expect(!far.lockScreen.contains("data-date"))
        let near = try render(#"{"type": "Text", "text": {"bind": "state.n", "format": "date"}}"#, state: ["n": 1_795_255_200])
        #expect(near.lockScreen.contains("data-date=\"1795255200000\""))
    }

    @Test func aDurationOfABillionYearsIsDrawnAsADash() throws {
        let html = try render(#"{"type": "Text", "text": {"bind": "state.n", "format": "duration"}}"#, state: ["n": 1e19]).lockScreen
        #expect(html.contains(">–<"))
    }
}
