/// One view of a layout's tree, with its modifiers: what a widget extension's SwiftUI body is
/// made of.
///
/// Written as `{"type": "VStack", "alignment": "leading", "spacing": 4, "children": [...],
/// "modifiers": [{"padding": 8}]}`. The types: `VStack`, `HStack`, `ZStack`, `Text`, `Image`,
/// `Spacer`, `ProgressView`, `If`. See docs/layouts.md for every field.
public struct LayoutView: Hashable, Sendable {
    public var content: Content
    public var modifiers: [LayoutModifier]

    public init(_ content: Content, modifiers: [LayoutModifier] = []) {
        self.content = content
        self.modifiers = modifiers
    }

    public indirect enum Content: Hashable, Sendable {
        case stack(Stack)
        case text(Text)
        case image(systemName: LayoutValue)
        case spacer(minLength: Double?)
        case progress(Progress)
        case conditional(LayoutCondition, then: LayoutView, else: LayoutView?)
    }

    public struct Stack: Hashable, Sendable {
        public enum Axis: String, Sendable {
            case vertical = "VStack", horizontal = "HStack", depth = "ZStack"
        }

        public var axis: Axis
        /// The stack's alignment, by SwiftUI's name for that axis (`leading`, `top`, `topLeading`, …).
        public var alignment: LayoutModifier.Alignment
        public var spacing: Double?
        public var children: [LayoutView]

        public init(axis: Axis, alignment: LayoutModifier.Alignment = .center, spacing: Double? = nil, children: [LayoutView]) {
            self.axis = axis
            self.alignment = alignment
            self.spacing = spacing
            self.children = children
        }
    }

    /// Text: plain (parts joined), a timer over an interval, or a date in a style.
    public enum Text: Hashable, Sendable {
        case parts([LayoutValue])
        /// `Text(timerInterval: start...end, countsDown:)`: counts by itself, and stops at the
        /// interval's end. Without a start, from when it is drawn (`Date.now...end`).
        case timer(start: LayoutValue?, end: LayoutValue, countsDown: Bool)
        /// `Text(date, style:)`.
        case date(LayoutValue, style: DateTextStyle)
    }

    /// SwiftUI's `Text.DateStyle`.
    public enum DateTextStyle: String, CaseIterable, Sendable {
        /// Counts up from a past date or down to a future one: `4:05`.
        case timer
        /// `in 5 min`, `2 min ago`.
        case relative
        case time, date
        /// `+4 min`, `-2 min`.
        case offset
    }

    public struct Progress: Hashable, Sendable {
        public enum Kind: Hashable, Sendable {
            case value(LayoutValue, total: LayoutValue)
            /// Fills (or empties, counting down) between two dates by itself; without a start,
            /// from when it is drawn.
            case timer(start: LayoutValue?, end: LayoutValue, countsDown: Bool)
        }

        public enum Style: String, CaseIterable, Sendable {
            case linear, circular
        }

        public var kind: Kind
        public var style: Style
    }

    /// The most views and the deepest nesting a layout may have.
    static let maximumDepth = 24

    private enum TypeName: String, CaseIterable {
        case VStack, HStack, ZStack, Text, Image, Spacer, ProgressView, If
    }

    static func parse(_ value: JSONValue, at path: String, depth: Int = 0, count: inout Int) throws(IsletError) -> LayoutView {
        guard depth < maximumDepth else { throw LayoutReader.error(at: path, "views nest deeper than \(maximumDepth) levels") }
        count += 1
        guard count <= Layout.maximumViews else { throw LayoutReader.error(at: path, "a layout has at most \(Layout.maximumViews) views") }
        var reader = try LayoutReader(value, at: path, expecting: "a view")
        guard let typeValue = reader.value("type") else {
            throw LayoutReader.error(at: reader.place("type"), "missing; expected one of \(TypeName.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let type = try LayoutReader.choice(typeValue, at: reader.place("type"), TypeName.self)
        let content: Content
        switch type {
        case .VStack, .HStack, .ZStack:
            let axis = Stack.Axis(rawValue: type.rawValue)!
            let items = try reader.array("children") ?? []
            var children: [LayoutView] = []
            for (index, item) in items.enumerated() {
                children.append(try parse(item, at: "\(reader.place("children"))[\(index)]", depth: depth + 1, count: &count))
            }
            content = .stack(
                Stack(
                    axis: axis,
                    alignment: try stackAlignment(axis, reader: &reader),
                    spacing: try reader.number("spacing", in: 0...200),
                    children: children
                )
            )
        case .Text:
            content = .text(try parseText(&reader))
        case .Image:
            content = .image(systemName: try LayoutValue.parse(try reader.required("systemName", "a symbol name"), at: reader.place("systemName")))
        case .Spacer:
            content = .spacer(minLength: try reader.number("minLength", in: 0...2000))
        case .ProgressView:
            content = .progress(try parseProgress(&reader))
        case .If:
            let condition = try LayoutCondition.parse(try reader.required("condition", "a condition"), at: reader.place("condition"))
            let then = try parse(try reader.required("then", "a view"), at: reader.place("then"), depth: depth + 1, count: &count)
            let otherwise = try reader.value("else").map { value throws(IsletError) in
                try parse(value, at: reader.place("else"), depth: depth + 1, count: &count)
            }
            content = .conditional(condition, then: then, else: otherwise)
        }
        var modifiers: [LayoutModifier] = []
        for (index, item) in (try reader.array("modifiers") ?? []).enumerated() {
            modifiers.append(try LayoutModifier.parse(item, at: "\(reader.place("modifiers"))[\(index)]"))
        }
        try reader.finish()
        return LayoutView(content, modifiers: modifiers)
    }

    private static func stackAlignment(_ axis: Stack.Axis, reader: inout LayoutReader) throws(IsletError) -> LayoutModifier.Alignment {
        guard let value = reader.value("alignment") else { return .center }
        let alignment = try LayoutReader.choice(value, at: reader.place("alignment"), LayoutModifier.Alignment.self)
        let allowed: Set<LayoutModifier.Alignment> =
            switch axis {
            case .vertical: [.leading, .center, .trailing]
            case .horizontal: [.top, .center, .bottom]
            case .depth: Set(LayoutModifier.Alignment.allCases)
            }
        guard allowed.contains(alignment) else {
            throw LayoutReader.error(
                at: reader.place("alignment"),
                "a \(axis.rawValue) aligns \(LayoutModifier.Alignment.allCases.filter(allowed.contains).map(\.rawValue).joined(separator: ", "))"
            )
        }
        return alignment
    }

    private static func parseText(_ reader: inout LayoutReader) throws(IsletError) -> Text {
        let forms = ["text", "timerInterval", "date"].filter { reader.keys.contains($0) }
        guard forms.count == 1 else {
            throw reader.error("a Text has one of text, timerInterval or date\(forms.isEmpty ? "" : ", not \(forms.joined(separator: " and "))")")
        }
        switch forms[0] {
        case "text":
            let place = reader.place("text")
            if case .array(let items) = reader.value("text") {
                var parts: [LayoutValue] = []
                for (index, item) in items.enumerated() { parts.append(try LayoutValue.parse(item, at: "\(place)[\(index)]")) }
                return .parts(parts)
            }
            return .parts([try LayoutValue.parse(reader.value("text")!, at: place)])
        case "timerInterval":
            let (start, end) = try interval(&reader)
            return .timer(start: start, end: end, countsDown: try reader.bool("countsDown") ?? true)
        default:
            let date = try LayoutValue.parse(reader.value("date")!, at: reader.place("date"))
            return .date(date, style: try reader.choice("style", DateTextStyle.self) ?? .time)
        }
    }

    private static func parseProgress(_ reader: inout LayoutReader) throws(IsletError) -> Progress {
        let style = try reader.choice("style", Progress.Style.self) ?? .linear
        if reader.keys.contains("timerInterval") {
            guard !reader.keys.contains("value") else { throw reader.error("a ProgressView has a value or a timerInterval, not both") }
            let (start, end) = try interval(&reader)
            return Progress(kind: .timer(start: start, end: end, countsDown: try reader.bool("countsDown") ?? false), style: style)
        }
        let value = try LayoutValue.parse(try reader.required("value", "a number, or give a timerInterval"), at: reader.place("value"))
        let total = try reader.value("total").map { total throws(IsletError) in try LayoutValue.parse(total, at: reader.place("total")) }
        return Progress(kind: .value(value, total: total ?? .literal(1)), style: style)
    }

    /// `{"start", "end"}`; a start left out is the moment the view is drawn, as SwiftUI's
    /// `Date.now...end` is in a widget's body: a countdown to a date alone, which stops at 0:00
    /// where `Text(date, style: .timer)` would count up again.
    private static func interval(_ reader: inout LayoutReader) throws(IsletError) -> (LayoutValue?, LayoutValue) {
        var interval = try LayoutReader(try reader.required("timerInterval", "{start, end}"), at: reader.place("timerInterval"), expecting: "{start, end}")
        let start = try interval.value("start").map { value throws(IsletError) in try LayoutValue.parse(value, at: interval.place("start")) }
        let end = try LayoutValue.parse(try interval.required("end", "a date"), at: interval.place("end"))
        try interval.finish()
        return (start, end)
    }
}
