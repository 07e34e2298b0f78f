import Foundation
import IsletCore
import IsletRender
import Testing

@testable import IsletKit

struct RideAttributes: ActivityAttributes {
    struct ContentState: Codable, Hashable {
        var speed: Double
        var distance: Double
        var paused: Bool
        var startedAt: Date
        var climb: Climb
        var nextClimb: Climb?

        struct Climb: Codable, Hashable {
            var name: String
            var gradient: Double
        }
    }
    var route: String
}

@Suite("Layout DSL")
struct LayoutDSLTests {
    static let ride = ActivityConfiguration(for: RideAttributes.self) { context in
        VStack(alignment: .leading, spacing: 8) {
            HStack {
                Image(systemName: "bicycle").foregroundStyle(.green)
                Text(context.attributes.route).font(.headline)
                Spacer()
                Text(context.state.startedAt, style: .timer).monospacedDigit()
            }
            HStack(alignment: .bottom) {
                Text(context.state.speed, format: .number(precision: 1, unit: "km/h"))
                    .font(.system(size: 34, weight: .bold))
                    .contentTransition(.numericText())
                Spacer()
                If(context.state.paused.isTrue) {
                    Text("Paused").foregroundStyle(.orange)
                } else: {
                    Text(context.state.distance, format: .number(precision: 1, unit: "km"))
                }
            }
            Text(context.state.climb.name)
            Text(context.state.nextClimb.name)
        }
        .padding(16)
        .activityBackgroundTint(Color(light: .white, dark: Color(hex: "#102018")))
    } dynamicIsland: { context in
        DynamicIsland {
            DynamicIslandExpandedRegion(.leading) { Image(systemName: "bicycle") }
            DynamicIslandExpandedRegion(.trailing) { Text(context.state.speed, format: .number(precision: 1)) }
            DynamicIslandExpandedRegion(.bottom) { Text(context.attributes.route) }
        } compactLeading: {
            Image(systemName: "bicycle")
        } compactTrailing: {
            Text(context.state.speed, format: .number(precision: 0))
        } minimal: {
            Text(context.state.speed, format: .number(precision: 0))
        }
        .keylineTint(.green)
    }

    @Test func aLayoutWrittenInSwiftIsTheDocumentTheServerTakes() throws {
        let document = try Self.ride.document()
        let layout = try Layout.parse(document)
        #expect(layout.dateEncoding == DateEncoding.secondsSince2001)
        let rows = Self.children(try #require(document["lockScreen"]))
        let speed = Self.children(rows[1])[0]
        #expect(speed["text"] == ["bind": "state.speed", "format": ["number": ["precision": 1, "unit": "km/h"]]])
        #expect(speed["modifiers"] == [["font": ["size": 34.0, "weight": "bold", "design": "default"]], ["contentTransition": "numericText"]])
        #expect(Self.children(rows[1])[2]["condition"] == ["bind": "state.paused"])
        #expect(rows[2]["text"] == ["bind": "state.climb.name"])
        #expect(rows[3]["text"] == ["bind": "state.nextClimb.name", "default": ""])
        #expect(document["dynamicIsland"]?["keylineTint"] == "green")

        // Drawn by the renderer with a content state encoded as iOS would.
        let state = RideAttributes.ContentState(
            speed: 27.44, distance: 12.3, paused: false, startedAt: Date(), climb: .init(name: "Col du Galibier", gradient: 6.9),
            nextClimb: .init(name: "Alpe d'Huez", gradient: 8.1)
        )
        let scope = LayoutScope(
            attributes: try Wire.json(RideAttributes(route: "Lakeside")), state: try Wire.json(state), isStale: false,
            dateEncoding: layout.dateEncoding
        )
        let drawn = Renderer().render(layout, scope: scope, now: Date())
        #expect(drawn.lockScreen.contains(">27.4 km/h<"))
        #expect(drawn.lockScreen.contains(">12.3 km<"))
        #expect(drawn.lockScreen.contains("Col du Galibier"))
        #expect(drawn.lockScreen.contains("Alpe d&#39;Huez") || drawn.lockScreen.contains("Alpe d&#x27;Huez") || drawn.lockScreen.contains("Alpe d'Huez"))
        #expect(drawn.compactTrailing.contains(">27<"))
    }

    /// The watch's and CarPlay's view, and the families the widget declares, in the document.
    @Test func theSmallFamilyIsARegionTheConfigurationDeclares() throws {
        let configuration = Self.ride
            .small { context in
                HStack {
                    Image(systemName: "bicycle")
                    Text(context.state.speed, format: .number(precision: 1))
                }
            }
            .supplementalActivityFamilies([.small, .medium])
        let document = try configuration.document()
        #expect(document["supplementalFamilies"] == ["small", "medium"])
        let layout = try Layout.parse(document)
        #expect(layout.drawsSmall)
        #expect(Self.children(try #require(document["small"]))[1]["text"] == ["bind": "state.speed", "format": ["number": ["precision": 1]]])
        // Without them the document is as before: the watch draws the compact pair.
        let plain = try Self.ride.document()
        #expect(plain["small"] == nil && plain["supplementalFamilies"] == nil)
    }

    static func children(_ node: JSONValue) -> [JSONValue] {
        if case .array(let children) = node["children"] { return children }
        return []
    }

    /// Reference 002's kind of status: an enum without raw values, encoded `{"failed": {}}`.
    struct Build: ActivityAttributes {
        enum Phase: Codable, Hashable { case pending, running, failed }
        struct ContentState: Codable, Hashable {
            var phase: Phase
            var previous: Phase
            var note: String
        }
    }

    static func simple<A: ActivityAttributes>(
        _ type: A.Type, @LayoutBuilder _ lockScreen: @escaping (ActivityViewContext<A>) -> [LayoutNode]
    ) -> ActivityConfiguration<A> {
        ActivityConfiguration(for: type, content: lockScreen) { _ in
            DynamicIsland {
                DynamicIslandExpandedRegion(.center) { Text("") }
            } compactLeading: { Text("") } compactTrailing: { Text("") } minimal: { Text("") }
        }
    }

    @Test func anEnumWithoutRawValuesBindsByTheCasesTheLayoutNames() throws {
        let configuration = Self.simple(Build.self) { context in
            If(context.state.phase == .failed) { Text("Failed") } else: {
                If(context.state.phase != .pending) { Text("Running") } else: { Text("Waiting") }
            }
            If(context.state.previous == .failed) { Text("again") }
        }
        let document = try configuration.document()
        let rows = Self.children(try #require(document["lockScreen"]))
        #expect(rows[0]["condition"] == ["bind": "state.phase.failed", "exists": true])
        #expect(rows[1]["condition"] == ["bind": "state.previous.failed", "exists": true])

        let layout = try Layout.parse(document)
        func drawn(_ state: Build.ContentState) throws -> String {
            let scope = LayoutScope(attributes: [:], state: try Wire.json(state), isStale: false, dateEncoding: layout.dateEncoding)
            return Renderer().render(layout, scope: scope, now: Date()).lockScreen
        }
        #expect(try drawn(.init(phase: .failed, previous: .pending, note: "")).contains(">Failed<"))
        #expect(try drawn(.init(phase: .running, previous: .failed, note: "")).contains(">Running<"))
        #expect(try drawn(.init(phase: .running, previous: .failed, note: "")).contains(">again<"))
        #expect(try drawn(.init(phase: .pending, previous: .pending, note: "")).contains(">Waiting<"))
    }

    struct Order: ActivityAttributes {
        struct Courier: Codable, Hashable {
            var name: String
            var stops: Double
        }
        struct ContentState: Codable, Hashable {
            var status: String
            var eta: Date?
            var note: String?
            var courier: Courier?
        }
    }

    /// Issue 27: a nil optional is a value a content state may have (`JSONEncoder` leaves it
    /// out), not a state that does not fit the layout: what binds it draws nothing and warns of
    /// nothing, and a test of it holds as Swift's `nil == x` does. A missing field that is not
    /// optional is still a warning.
    @Test func anOptionalsNilDrawsNothingAndIsNoWarning() throws {
        let configuration = Self.simple(Order.self) { context in
            Text(context.state.status)
            Text(context.state.eta, style: .time)
            Text(context.state.courier.name)
            If(context.state.note == "leave at the door") { Text("at the door") }
            If(context.state.note != "leave at the door") { Text("ring") }
            If(context.state.courier.stops > 1) { Text("stops away") }
        }
        let document = try configuration.document()
        let rows = Self.children(try #require(document["lockScreen"]))
        #expect(rows[0]["text"] == ["bind": "state.status"])
        #expect(rows[1]["date"] == ["bind": "state.eta", "default": ""])
        #expect(rows[2]["text"] == ["bind": "state.courier.name", "default": ""])
        let note: JSONValue = ["all": [["bind": "state.note", "exists": true], ["bind": "state.note", "equals": "leave at the door"]]]
        #expect(rows[3]["condition"] == note)
        #expect(rows[4]["condition"] == ["not": note])
        #expect(rows[5]["condition"] == ["all": [["bind": "state.courier.stops", "exists": true], ["bind": "state.courier.stops", "greaterThan": 1.0]]])

        let layout = try Layout.parse(document)
        func drawn(_ state: JSONValue) -> Presentation {
            let scope = LayoutScope(attributes: [:], state: state, isStale: false, dateEncoding: layout.dateEncoding)
            return Renderer().render(layout, scope: scope, now: Date())
        }
        let confirmed = drawn(try Wire.json(Order.ContentState(status: "confirmed")))
        #expect(confirmed.warnings == [])
        #expect(confirmed.lockScreen.contains(">ring<") && !confirmed.lockScreen.contains(">at the door<"))
        #expect(drawn([:]).warnings.map(\.message) == ["state.status is missing"])
    }

    @Test func anEnumTheLayoutNeverNamesIsAClearError() {
        struct Odd: ActivityAttributes {
            enum Phase: Codable, Hashable { case warmUp, race }
            struct ContentState: Codable, Hashable {
                var phase: Phase
                var rider: String
            }
        }
        let configuration = Self.simple(Odd.self) { context in Text(context.state.rider) }
        #expect {
            try configuration.document()
        } throws: { error in
            "\(error)".contains("ContentState cannot be probed for its field names")
                && "\(error)".contains("CaseIterable, or compared with one of its cases")
        }
    }
}

/// The README's IsletKit snippet is Examples/MyApp's app, word for word: the root package compiles
/// that file (`MyAppExample`), so the snippet compiles too.
@Suite("The README's app")
struct ReadmeAppTests {
    @Test func theReadmesSnippetIsExamplesMyApp() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let app = try String(contentsOf: root.appendingPathComponent("Examples/MyApp/Sources/MyApp/main.swift"), encoding: .utf8)
        let blocks = readme.components(separatedBy: "```swift\n").dropFirst().map { $0.components(separatedBy: "```")[0] }
        #expect(blocks.contains(app), "README.md has no ```swift block equal to Examples/MyApp/Sources/MyApp/main.swift")
    }
}
