import Foundation
import IsletCore
import IsletRender
import SnapshotTesting
import Synchronization
import Testing

/// 2026-11-21 10:00:00 UTC, in Unix seconds.
let noon = 1_795_255_200.0

/// Renders a Lock Screen view (JSON) against attributes and a state, at `noon`.
func render(
    _ view: String, state: JSONValue = [:], attributes: JSONValue = [:], isStale: Bool = false,
    dateEncoding: String = "secondsSince1970", icons: Renderer = Renderer()
) throws -> Presentation {
    let document = #"{"dateEncoding": "\#(dateEncoding)", "lockScreen": \#(view)}"#
    let layout = try Layout.parse(try JSONDecoder().decode(JSONValue.self, from: Data(document.utf8)))
    let scope = LayoutScope(attributes: attributes, state: state, isStale: isStale, dateEncoding: layout.dateEncoding)
    return icons.render(layout, scope: scope, now: Date(timeIntervalSince1970: noon))
}

/// The Lock Screen's HTML, one element per line, for snapshots a person can read.
func lines(_ presentation: Presentation) -> String {
    presentation.lockScreen.replacingOccurrences(of: "><", with: ">\n<")
}

@Suite("Renderer")
struct RendererTests {
    @Test func stacksAndTheirAlignmentAndSpacing() throws {
        let html = lines(try render("""
            {"type": "VStack", "alignment": "leading", "spacing": 2, "children": [
              {"type": "HStack", "alignment": "bottom", "children": [{"type": "Text", "text": "a"}, {"type": "Spacer"}, {"type": "Text", "text": "b"}]},
              {"type": "ZStack", "alignment": "topTrailing", "children": [{"type": "Text", "text": "under"}, {"type": "Text", "text": "over"}]},
              {"type": "HStack", "children": [{"type": "Text", "text": "c"}, {"type": "Spacer", "minLength": 20}]}
            ]}
            """))
        assertSnapshot(of: html, as: .lines)
    }

    @Test func aLinearProgressViewInAnHStackTakesTheRoomLeft() throws {
        // SwiftUI: the linear bar is flexible in width, so its HStack is too; a circular one is not.
        let html = lines(try render("""
            {"type": "VStack", "children": [
              {"type": "HStack", "children": [
                {"type": "ProgressView", "timerInterval": {"start": {"bind": "state.start"}, "end": {"bind": "state.end"}}},
                {"type": "Text", "timerInterval": {"start": {"bind": "state.start"}, "end": {"bind": "state.end"}}}
              ]},
              {"type": "HStack", "children": [{"type": "ProgressView", "value": 0.5, "style": "circular"}, {"type": "Text", "text": "half"}]}
            ]}
            """, state: ["start": .number(noon - 60), "end": .number(noon + 240)]))
        assertSnapshot(of: html, as: .lines)
        #expect(html.contains(#"<div class="la-hstack la-a-center la-flex-x""#))
        #expect(html.contains(#"class="la-progress la-progress-linear la-flex-x""#))
        #expect(!html.contains(#"class="la-progress la-progress-circular la-flex-x""#))
    }

    @Test func textJoinsItsPartsAndImagesDrawIsletsIcons() throws {
        let html = lines(try render("""
            {"type": "HStack", "children": [
              {"type": "Image", "systemName": "bicycle"},
              {"type": "Image", "systemName": {"bind": "state.icon"}},
              {"type": "Text", "text": ["Ride ", {"bind": "attributes.name"}, " · ", {"bind": "state.laps"}, " laps ", true]}
            ]}
            """, state: ["icon": "figure.run", "laps": 3], attributes: ["name": "Morning"]))
        assertSnapshot(of: html, as: .lines)
        #expect(html.contains("<svg"))
    }

    @Test func anUnknownIconDrawsAPlaceholderAndIsReported() throws {
        let reported = ReportedNames()
        let presentation = try render(
            #"{"type": "Image", "systemName": "unicorn.fill"}"#, icons: Renderer { name in reported.add(name) }
        )
        #expect(presentation.lockScreen.contains("la-placeholder"))
        #expect(presentation.lockScreen.contains("aria-label=\"unicorn.fill\""))
        #expect(reported.names == ["unicorn.fill"])
    }

    @Test func iconSetHasTheSymbolsLiveActivitiesUseMost() {
        let names = Set(IconSet.builtIn.names)
        #expect(names.count >= 60)
        for name in [
            "bicycle", "timer", "clock", "car.fill", "box.truck", "fork.knife", "figure.run", "checkmark.circle.fill",
            "xmark.circle.fill", "hourglass", "bolt.fill", "drop.fill", "sportscourt", "airplane",
        ] {
            #expect(names.contains(name), "\(name)")
        }
        for name in names {
            let svg = IconSet.builtIn.svg(named: name) ?? ""
            #expect(svg.hasPrefix("<svg") && !svg.contains("<script") && !svg.contains(" id="), "\(name)")
        }
    }

    @Test func formattersNumberPercentDurationDateAndRelative() throws {
        let html = lines(try render("""
            {"type": "VStack", "children": [
              {"type": "Text", "text": {"bind": "state.speed", "format": {"number": {"precision": 1, "unit": "km/h"}}}},
              {"type": "Text", "text": {"bind": "state.distance", "format": "number"}},
              {"type": "Text", "text": {"bind": "state.distance", "format": {"number": {"precision": 0}}}},
              {"type": "Text", "text": {"bind": "state.done", "format": "percent"}},
              {"type": "Text", "text": {"bind": "state.done", "format": {"percent": {"precision": 1}}}},
              {"type": "Text", "text": {"bind": "state.elapsed", "format": "duration"}},
              {"type": "Text", "text": {"bind": "state.elapsed", "format": {"duration": {"style": "abbreviated"}}}},
              {"type": "Text", "text": {"bind": "state.eta", "format": "date"}},
              {"type": "Text", "text": {"bind": "state.eta", "format": {"date": {"style": "dateTime"}}}},
              {"type": "Text", "text": {"bind": "state.eta", "format": "relative"}},
              {"type": "Text", "text": {"bind": "state.missing", "format": "number", "default": "–"}},
              {"type": "Text", "text": {"bind": "state.name", "format": "number"}}
            ]}
            """, state: ["speed": 23.456, "distance": 12345.5, "done": 0.4257, "elapsed": 3909, "eta": .number(noon + 300), "name": "n/a"]))
        assertSnapshot(of: html, as: .lines)
        #expect(html.contains(">23.5 km/h<"))
        #expect(html.contains(">12,345.5<"))
        #expect(html.contains(">43%<"))
        #expect(html.contains(">1:05:09<"))
        #expect(html.contains(">1h 5m<"))
        #expect(html.contains(">in 5 min<"))
    }

    @Test func datesReadAsSwiftEncodesThemByDefault() throws {
        // A Date that JSONEncoder wrote: seconds since 2001-01-01.
        let html = try render(
            #"{"type": "Text", "date": {"bind": "state.end"}, "style": "timer"}"#,
            state: ["end": .number(noon - 978_307_200 + 245)], dateEncoding: "secondsSince2001"
        ).lockScreen
        #expect(html.contains(">4:05<"))
        #expect(html.contains("data-date=\"\(Int64((noon + 245) * 1000))\""))
    }

    @Test func timersAndTimedProgressCarryTheirIntervalForTheDisplay() throws {
        let html = lines(try render("""
            {"type": "VStack", "children": [
              {"type": "Text", "timerInterval": {"start": {"bind": "state.start"}, "end": {"bind": "state.end"}}},
              {"type": "Text", "timerInterval": {"start": {"bind": "state.start"}, "end": {"bind": "state.end"}}, "countsDown": false},
              {"type": "Text", "date": {"bind": "state.start"}, "style": "timer"},
              {"type": "Text", "date": {"bind": "state.end"}, "style": "relative"},
              {"type": "Text", "date": {"bind": "state.end"}, "style": "offset"},
              {"type": "Text", "date": {"bind": "state.end"}, "style": "time"},
              {"type": "Text", "date": {"bind": "state.end"}, "style": "date"},
              {"type": "ProgressView", "timerInterval": {"start": {"bind": "state.start"}, "end": {"bind": "state.end"}}},
              {"type": "ProgressView", "timerInterval": {"start": {"bind": "state.start"}, "end": {"bind": "state.end"}}, "countsDown": true}
            ]}
            """, state: ["start": .number(noon - 60), "end": .number(noon + 240)]))
        assertSnapshot(of: html, as: .lines)
        #expect(html.contains(">4:00<"))  // counting down: 240 s left
        #expect(html.contains(">1:00<"))  // counting up: 60 s in
        #expect(html.contains("--p:0.2\""))
        #expect(html.contains("--p:0.8\""))
    }

    /// `Date.now...end`: a timer interval without a start counts from when it is drawn, and stops
    /// at its end rather than counting up again.
    @Test func aTimerIntervalWithoutAStartCountsDownFromWhenItIsDrawnAndStopsAtItsEnd() throws {
        let view = """
            {"type": "VStack", "children": [
              {"type": "Text", "timerInterval": {"end": {"bind": "state.end"}}},
              {"type": "ProgressView", "timerInterval": {"end": {"bind": "state.end"}}, "countsDown": true}
            ]}
            """
        let soon = try render(view, state: ["end": .number(noon + 245)]).lockScreen
        #expect(soon.contains(">4:05<") && soon.contains("data-start=\"\(Int64(noon * 1000))\""))
        #expect(soon.contains("--p:1\""))
        let past = try render(view, state: ["end": .number(noon - 30)])
        #expect(past.lockScreen.contains(">0:00<") && past.lockScreen.contains("--p:0\""))
        #expect(past.warnings.isEmpty)
        #expect(try render(view).warnings.map(\.path) == ["lockScreen.children[0].timerInterval.end"])
    }

    @Test func progressByValueAndTotalLinearAndCircular() throws {
        let html = lines(try render("""
            {"type": "VStack", "children": [
              {"type": "ProgressView", "value": {"bind": "state.done"}, "total": {"bind": "state.of"}},
              {"type": "ProgressView", "value": 0.25, "style": "circular", "modifiers": [{"tint": "green"}]},
              {"type": "ProgressView", "value": 5, "total": 2}
            ]}
            """, state: ["done": 3, "of": 4]))
        assertSnapshot(of: html, as: .lines)
        #expect(html.contains("--p:0.75"))
        #expect(html.contains("--p:1\""))
    }

    @Test func conditionalsDrawOneBranchWithItsOwnPath() throws {
        let view = """
            {"type": "VStack", "children": [
              {"type": "If", "condition": {"bind": "state.status", "equals": "failed"},
               "then": {"type": "Text", "text": "Failed", "modifiers": [{"foregroundStyle": "red"}]},
               "else": {"type": "Text", "text": "Passing"}},
              {"type": "If", "condition": {"bind": "isStale"}, "then": {"type": "Text", "text": "Out of date"}}
            ]}
            """
        let failed = lines(try render(view, state: ["status": "failed"]))
        let passing = lines(try render(view, state: ["status": "ok"], isStale: true))
        assertSnapshot(of: failed, as: .lines, named: "then")
        assertSnapshot(of: passing, as: .lines, named: "else")
        #expect(failed.contains("data-n=\"l.0t\"") && failed.contains("la-empty"))
        #expect(passing.contains("data-n=\"l.0e\"") && passing.contains("Out of date"))
    }

    /// Issue 27: a state that does not fit the layout drew an almost empty card and said nothing.
    /// It still draws what it can; each binding that found nothing its view could draw is noted,
    /// where it is read, once per region.
    @Test func aStateThatDoesNotFitTheLayoutIsWarnedAboutWhereItIsRead() throws {
        let presentation = try render("""
            {"type": "VStack", "children": [
              {"type": "Text", "text": ["Build ", {"bind": "attributes.buildId"}]},
              {"type": "ProgressView", "value": {"bind": "state.progress"}},
              {"type": "Text", "text": {"bind": "state.done", "format": "percent"}},
              {"type": "Text", "text": {"bind": "state.speed", "format": "number", "default": "–"}},
              {"type": "Text", "timerInterval": {"start": {"bind": "state.start"}, "end": {"bind": "state.eta"}}},
              {"type": "If", "condition": {"bind": "state.status", "equals": "failed"}, "then": {"type": "Text", "text": "Failed"},
               "else": {"type": "Text", "text": {"bind": "state.step"}}},
              {"type": "If", "condition": {"any": [{"bind": "isStale"}, {"bind": "state.laps", "greaterThan": 2}]}, "then": {"type": "Spacer"}},
              {"type": "Text", "text": {"bind": "state.progress"}}
            ]}
            """, state: ["done": "most", "speed": "fast", "start": 1e300, "eta": "10:04", "step": .null, "laps": true])
        #expect(
            presentation.warnings.map(\.message) == [
                "attributes.buildId is missing",
                "state.progress is missing",
                "state.done is a string, not a number",
                "state.speed is a string, not a number",
                "state.start is a number outside the dates Islet draws; a date is a number of seconds since 1970-01-01 (the layout's dateEncoding)",
                "state.eta is a string, not a date; a date is a number of seconds since 1970-01-01 (the layout's dateEncoding)",
                "state.status is missing",
                "state.step is null",
                "state.laps is true or false, not a number",
            ]
        )
        #expect(
            presentation.warnings.map(\.path) == [
                "lockScreen.children[0].text[1]", "lockScreen.children[1].value", "lockScreen.children[2].text", "lockScreen.children[3].text",
                "lockScreen.children[4].timerInterval.start", "lockScreen.children[4].timerInterval.end",
                "lockScreen.children[5].condition.bind", "lockScreen.children[5].else.text",
                "lockScreen.children[6].condition.any[1].bind",
            ]
        )
        #expect(presentation.warnings.map(\.problem) == [.missing, .missing, .notANumber, .notANumber, .notADate, .notADate, .missing, .missing, .notANumber])
        #expect(Set(presentation.warnings.map(\.region)) == [.lockScreen])
        // Drawn as before: what is there is shown as it is.
        #expect(presentation.lockScreen.contains(">most<") && presentation.lockScreen.contains(">fast<"))
    }

    @Test func aMissingFieldIsWarnedAboutOncePerRegionThatReadsIt() throws {
        let document = #"""
            {"lockScreen": {"type": "HStack", "children": [{"type": "Text", "text": {"bind": "state.speed"}}, {"type": "Text", "text": {"bind": "state.speed"}}]},
             "dynamicIsland": {"expanded": {"bottom": {"type": "Text", "text": {"bind": "state.speed"}}},
                               "compactTrailing": {"type": "Text", "text": {"bind": "state.speed"}}, "minimal": {"type": "Text", "text": "km/h"}}}
            """#
        let layout = try Layout.parse(try JSONDecoder().decode(JSONValue.self, from: Data(document.utf8)))
        let drawn = Renderer().render(layout, scope: LayoutScope(attributes: [:], state: [:], isStale: false), now: Date(timeIntervalSince1970: noon))
        #expect(drawn.warnings.map(\.region) == [.lockScreen, .expandedBottom, .compactTrailing])
        #expect(drawn.warnings.map(\.path) == ["lockScreen.children[0].text", "dynamicIsland.expanded.bottom.text", "dynamicIsland.compactTrailing.text"])
    }

    /// What a layout author says may be missing is not a warning: a `default`, an `exists` test,
    /// a comparison with null, and whatever a branch not drawn reads.
    @Test func aValueTheLayoutSaysMayBeMissingIsNoWarning() throws {
        let presentation = try render("""
            {"type": "VStack", "children": [
              {"type": "Text", "text": {"bind": "state.note", "default": ""}},
              {"type": "Text", "text": {"bind": "state.speed", "format": "number", "default": "–"}},
              {"type": "If", "condition": {"bind": "state.eta", "exists": true}, "then": {"type": "Text", "date": {"bind": "state.eta"}, "style": "timer"}},
              {"type": "If", "condition": {"all": [{"bind": "state.laps", "exists": true}, {"bind": "state.laps", "greaterThan": 2}]}, "then": {"type": "Spacer"}},
              {"type": "If", "condition": {"bind": "state.courier", "notEquals": null}, "then": {"type": "Text", "text": {"bind": "state.courier"}}},
              {"type": "If", "condition": {"bind": "state.courier", "equals": null}, "then": {"type": "Text", "text": "no courier yet"}},
              {"type": "If", "condition": {"bind": "isStale"}, "then": {"type": "Text", "text": {"bind": "state.never"}}},
              {"type": "If", "condition": {"bind": "state.status", "exists": false}, "then": {"type": "Text", "text": "starting"},
               "else": {"type": "Text", "text": {"bind": "state.status"}}}
            ]}
            """)
        #expect(presentation.warnings == [])
        #expect(presentation.lockScreen.contains(">no courier yet<") && presentation.lockScreen.contains(">starting<"))
    }

    @Test func modifiersApplyInOrderAsInSwiftUI() throws {
        let html = lines(try render("""
            {"type": "VStack", "children": [
              {"type": "Text", "text": "padded then painted", "modifiers": [{"padding": 8}, {"background": "blue"}, {"cornerRadius": 6}]},
              {"type": "Text", "text": "painted then padded", "modifiers": [{"background": "blue"}, {"padding": {"horizontal": 12, "top": 2}}]},
              {"type": "Text", "text": "framed", "modifiers": [{"frame": {"width": 80, "height": 30, "alignment": "leading"}}, {"background": "#FF950080"}]},
              {"type": "Text", "text": "wide", "modifiers": [{"frame": {"maxWidth": "infinity", "minHeight": 10}}]},
              {"type": "Text", "text": "inner color wins", "modifiers": [{"foregroundStyle": "red"}, {"foregroundStyle": "blue"}]},
              {"type": "Text", "text": "styled", "modifiers": [
                {"font": "headline"}, {"font": {"size": 12, "design": "monospaced"}}, {"monospacedDigit": true}, {"lineLimit": 2},
                {"multilineTextAlignment": "trailing"}, {"opacity": 0.5}, {"contentTransition": "numericText"}]},
              {"type": "Text", "text": "counts down", "modifiers": [{"contentTransition": {"numericText": {"countsDown": true}}}]},
              {"type": "Text", "text": "fades", "modifiers": [{"contentTransition": "opacity"}, {"padding": true}]}
            ],
            "modifiers": [{"activityBackgroundTint": {"light": "#FFFFFF", "dark": "#1C1C1E"}}, {"activitySystemActionForegroundColor": "orange"}]}
            """))
        assertSnapshot(of: html, as: .lines)
    }

    @Test func lightAndDarkColorsComeAsAPairPerUse() throws {
        let presentation = try render("""
            {"type": "Text", "text": "adaptive", "modifiers": [
              {"foregroundStyle": {"light": "#000000", "dark": "#FFFFFF"}}, {"background": "secondary"},
              {"activityBackgroundTint": {"light": "#F2F2F7", "dark": "#000000"}}]}
            """)
        assertSnapshot(of: lines(presentation), as: .lines)
        #expect(presentation.lockScreen.contains("--fg-l:rgb(0,0,0);--fg-d:rgb(255,255,255)"))
        #expect(presentation.lockScreen.contains("--bg-l:var(--la-secondary);--bg-d:var(--la-secondary)"))
        #expect(presentation.backgroundTint == CSSColor(light: "rgb(242,242,247)", dark: "rgb(0,0,0)"))
        // Every system color has a value for each appearance in the stylesheet.
        let css = Renderer.stylesheet
        let light = css.components(separatedBy: ".la-dark {")[0]
        let dark = css.components(separatedBy: ".la-dark {")[1].components(separatedBy: "}")[0]
        for name in LayoutColor.SystemColor.allCases.map(\.rawValue) {
            #expect(light.contains("--la-\(name):"), "\(name) in light")
            if !["white", "black", "clear"].contains(name) { #expect(dark.contains("--la-\(name):"), "\(name) in dark") }
        }
    }

    @Test func aPresentationsTintsAreColorsAnyPageCanUse() throws {
        // Not the stylesheet's variables, meaningless without it: iOS's values for each appearance.
        let document = #"""
            {"lockScreen": {"type": "Text", "text": "x", "modifiers": [{"activityBackgroundTint": "blue"},
              {"activitySystemActionForegroundColor": {"light": "accentColor", "dark": "#102030"}}]},
             "dynamicIsland": {"keylineTint": "white"}}
            """#
        let layout = try Layout.parse(try JSONDecoder().decode(JSONValue.self, from: Data(document.utf8)))
        let presentation = Renderer().render(layout, scope: LayoutScope(attributes: [:], state: [:], isStale: false), now: Date(timeIntervalSince1970: noon))
        #expect(presentation.backgroundTint == CSSColor(light: "#007aff", dark: "#0a84ff"))
        #expect(presentation.systemActionForegroundColor == CSSColor(light: "#007aff", dark: "rgb(16,32,48)"))
        #expect(presentation.keylineTint == CSSColor(light: "#ffffff", dark: "#ffffff"))
        for color in LayoutColor.SystemColor.allCases {
            let resolved = CSSColor(resolving: .system(color))
            #expect(!resolved.light.contains("var(") && !resolved.dark.contains("var("), "\(color)")
        }
    }

    @Test func hostileTextIsEscapedEverywhere() throws {
        let hostile = #"<script>alert(1)</script>"><img src=x onerror=alert(2)>'&"#
        let presentation = try render("""
            {"type": "VStack", "children": [
              {"type": "Text", "text": {"bind": "state.note"}},
              {"type": "Text", "text": {"bind": "state.n", "format": {"number": {"unit": "<b>u</b>"}}}},
              {"type": "Image", "systemName": {"bind": "state.note"}},
              {"type": "Text", "text": {"bind": "attributes.nested"}},
              {"type": "Text", "text": {"bind": "state.missing", "default": "<i>fallback</i>"}}
            ]}
            """, state: ["note": .string(hostile), "n": 1], attributes: ["nested": ["k": .string(hostile)]])
        let html = presentation.lockScreen
        assertSnapshot(of: lines(presentation), as: .lines)
        for forbidden in ["<script", "<img", "<b>", "<i>", "onerror=alert(2)>"] {
            #expect(!html.contains(forbidden), "\(forbidden)")
        }
        #expect(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;&quot;&gt;&lt;img src=x onerror=alert(2)&gt;&#39;&amp;"))
    }

    @Test func theDefaultCardDrawsAnyActivity() throws {
        let layout = Layout.defaultCard(attributesType: "BuildAttributes", attributes: ["buildId": "1234"], state: ["status": "running", "progress": 40])
        let presentation = Renderer().render(
            layout, scope: LayoutScope(attributes: ["buildId": "1234"], state: ["status": "running", "progress": 40], isStale: false),
            now: Date(timeIntervalSince1970: noon)
        )
        assertSnapshot(of: lines(presentation), as: .lines)
        for region in [presentation.compactLeading, presentation.compactTrailing, presentation.minimal, presentation.expandedLeading] {
            #expect(!region.isEmpty)
        }
        #expect(presentation.lockScreen.contains(">Build<") && presentation.lockScreen.contains(">running<"))
    }

    /// The shipped examples parse, draw every region with every sample state, name only icons
    /// Islet has, and find every value they bind (no warnings).
    @Test func theExampleLayoutsDrawEveryRegionWithEverySampleState() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: examples.path).filter { !$0.contains(".") }.sorted()
        #expect(names == ["bike-computer", "ci-build", "water-countdown"])
        for name in names {
            let folder = examples.appendingPathComponent(name)
            let layout = try Layout.parse(try json(folder.appendingPathComponent("layout.json")))
            let attributes = try json(folder.appendingPathComponent("attributes.json"))
            let states = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix("state") }
            #expect(!states.isEmpty, "\(name)")
            for file in states {
                let unknown = ReportedNames()
                let scope = LayoutScope(
                    attributes: attributes, state: try json(folder.appendingPathComponent(file)), isStale: false,
                    dateEncoding: layout.dateEncoding
                )
                let drawn = Renderer { unknown.add($0) }.render(layout, scope: scope, now: Date(timeIntervalSince1970: noon))
                for (region, html) in [
                    ("lockScreen", drawn.lockScreen), ("compactLeading", drawn.compactLeading),
                    ("compactTrailing", drawn.compactTrailing), ("minimal", drawn.minimal),
                    ("expandedLeading", drawn.expandedLeading), ("expandedTrailing", drawn.expandedTrailing),
                    ("expandedBottom", drawn.expandedBottom), ("small", drawn.small),
                ] {
                    #expect(html.contains("data-n="), "\(name) \(file): \(region) draws nothing")
                }
                #expect(unknown.names.isEmpty, "\(name) \(file) names icons Islet lacks: \(unknown.names)")
                #expect(drawn.warnings.isEmpty, "\(name) \(file): \(drawn.warnings.map(\.message))")
                #expect(drawn.drawsSmall, "\(name) declares its small region")
            }
        }
    }

    /// Issue 27: the ci example's timer counted on past the estimated completion time while its
    /// label still said "remaining". Past the estimate it stops at 0:00 (in the display's script
    /// too: the interval ends there); once the activity is stale — the example's stale date is its
    /// estimate — it says how long the build is overdue.
    @Test func theCIExamplesTimerStopsAtTheEstimateAndThenSaysOverdue() throws {
        let layout = try Layout.parse(try json(examples.appendingPathComponent("ci-build/layout.json")))
        func drawn(_ secondsToEstimate: Double, stale: Bool = false) -> Presentation {
            let estimate = noon + secondsToEstimate - 978_307_200  // a Swift Date: seconds since 2001
            let state: JSONValue = ["status": "inProgress", "estimatedCompletionTime": .number(estimate)]
            let scope = LayoutScope(attributes: ["buildId": "42"], state: state, isStale: stale, dateEncoding: layout.dateEncoding)
            return Renderer().render(layout, scope: scope, now: Date(timeIntervalSince1970: noon))
        }
        let running = drawn(150)
        #expect(running.lockScreen.contains(">2:30<") && running.lockScreen.contains(">remaining<"))
        let late = drawn(-90)
        for (region, html) in [("lockScreen", late.lockScreen), ("expandedTrailing", late.expandedTrailing), ("compactTrailing", late.compactTrailing)] {
            #expect(!html.contains(">1:30<"), "\(region): a timer counts on past the estimate")
            #expect(html.contains(">0:00<") && html.contains("data-end=\"\(Int64((noon - 90) * 1000))\""), "\(region)")
        }
        let overdue = drawn(-90, stale: true)
        #expect(overdue.lockScreen.contains(">1:30<") && overdue.lockScreen.contains(">overdue<"))
        #expect(!overdue.lockScreen.contains("remaining"))
        #expect(running.warnings.isEmpty && late.warnings.isEmpty && overdue.warnings.isEmpty)
    }

    @Test func theWatchAndCarPlayDrawSmallWhenDeclaredAndTheCompactPairOtherwise() throws {
        let small = #"{"type": "Text", "text": "S"}"#
        let pair = #""dynamicIsland": {"compactLeading": {"type": "Text", "text": "L"}, "compactTrailing": {"type": "Text", "text": "T"}}"#
        let declared = try drawLayout(#"{"small": \#(small), "supplementalFamilies": ["small"], \#(pair)}"#)
        #expect(declared.drawsSmall && declared.warnings.isEmpty)
        for surface in [Surface.watch, .carplay] {
            let frame = PresentationDocument.frame(declared, on: surface)
            #expect(frame.contains("data-small=\"small\"") && frame.contains(">S<") && !frame.contains(">L<"), "\(frame)")
        }
        // Written but not declared: the watch draws the compact pair, and the drawing says why.
        let undeclared = try drawLayout(#"{"small": \#(small), \#(pair)}"#)
        #expect(undeclared.warnings == [.smallNotDeclared])
        #expect(undeclared.warnings.first?.message.hasPrefix("small is drawn only when supplementalFamilies has small") == true)
        let frame = PresentationDocument.frame(undeclared, on: .watch, size: Surface.watch.size(named: "40mm"))
        #expect(frame.contains("data-small=\"fallback\"") && frame.contains(">L<") && frame.contains(">T<") && !frame.contains(">S<"))
        #expect(frame.contains("width:152px;height:69.5px"))
        // No small region at all: the fallback, with no warning.
        let none = try drawLayout(#"{\#(pair)}"#)
        #expect(!none.drawsSmall && none.warnings.isEmpty)
        #expect(PresentationDocument.frame(none, on: .carplay).contains("data-small=\"fallback\""))
    }

    @Test func eachSurfaceFramesItsPresentationAtApplesSize() throws {
        let drawn = try drawLayout(#"""
            {"lockScreen": {"type": "Text", "text": "lock"}, "small": {"type": "Text", "text": "small"}, "supplementalFamilies": ["small"],
             "dynamicIsland": {"compactLeading": {"type": "Text", "text": "cl"}, "compactTrailing": {"type": "Text", "text": "ct"},
                               "minimal": {"type": "Text", "text": "min"}, "expanded": {"bottom": {"type": "Text", "text": "exp"}}}}
            """#)
        let carplay = PresentationDocument.frame(drawn, on: .carplay, size: Surface.carplay.size(named: "240x100"))
        #expect(carplay.contains("width:240px;height:100px") && carplay.contains("la-dark"))
        let ipad = PresentationDocument.frame(drawn, on: .ipad, size: Surface.ipad.size(named: "425"))
        #expect(ipad.contains("width:425px") && ipad.contains(">lock<") && ipad.contains("data-surface=\"ipad\""))
        let mac = PresentationDocument.frame(drawn, on: .mac)
        #expect(mac.contains("islet-menubar-item") && mac.contains(">cl<") && mac.contains(">ct<") && mac.contains(">exp<"))
        let standby = PresentationDocument.frame(drawn, on: .standby)
        #expect(standby.contains("width:852px;height:393px") && standby.contains(">min<") && standby.contains(">lock<"))
        // The watch and CarPlay are dark only; the iPad follows the appearance.
        #expect(PresentationDocument.html(drawn, on: .watch, size: nil, appearance: .light, title: "w").contains("islet-wallpaper la-dark"))
        #expect(!PresentationDocument.html(drawn, on: .ipad, size: nil, appearance: .light, title: "i").contains("islet-wallpaper la-dark"))
        #expect(PresentationDocument.pageSize(of: .watch, size: Surface.watch.size(named: "40mm")) == (184, 102))
    }

    @Test func theStandaloneDocumentFramesEachPresentation() throws {
        let presentation = try render(#"{"type": "Text", "text": "hello"}"#, isStale: true)
        let page = PresentationDocument.html(presentation, kinds: PresentationDocument.Kind.allCases, appearance: .dark, title: "<x>")
        #expect(page.contains("<title>&lt;x&gt;</title>"))
        #expect(page.contains("class=\"la-content islet-wallpaper la-dark\""))
        for kind in PresentationDocument.Kind.allCases { #expect(page.contains("data-kind=\"\(kind.rawValue)\"")) }
        #expect(page.contains("islet-card islet-stale"))
        #expect(page.contains("IsletPresentation.refresh"))
    }
}

/// The reference scenarios' layouts and sample states (Examples/Layouts).
let examples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Examples/Layouts")
    .standardizedFileURL

/// Draws a whole layout document at `noon`, with an empty state.
func drawLayout(_ document: String) throws -> Presentation {
    let layout = try Layout.parse(try JSONDecoder().decode(JSONValue.self, from: Data(document.utf8)))
    return Renderer().render(layout, scope: LayoutScope(attributes: [:], state: [:], isStale: false), now: Date(timeIntervalSince1970: noon))
}

/// A JSON file.
func json(_ url: URL) throws -> JSONValue { try JSONDecoder().decode(JSONValue.self, from: Data(contentsOf: url)) }

/// Names a renderer reported, collected across its callback.
final class ReportedNames: Sendable {
    private let storage = Mutex<[String]>([])
    func add(_ name: String) { storage.withLock { $0.append(name) } }
    var names: [String] { storage.withLock { $0 } }
}

