/// A SwiftUI view modifier. A view's modifiers apply in order, as in SwiftUI: padding and then a
/// background is not a background and then padding.
///
/// Written as a one-key object in the view's `modifiers` array: `{"padding": 8}`,
/// `{"font": {"size": 17, "weight": "semibold"}}`, `{"foregroundStyle": "green"}`.
public enum LayoutModifier: Hashable, Sendable {
    case font(Font)
    case monospacedDigit
    case foregroundStyle(LayoutColor)
    /// The accent of progress views inside (`.tint`).
    case tint(LayoutColor)
    case padding(Edges)
    case frame(Frame)
    case background(LayoutColor)
    case cornerRadius(Double)
    case opacity(Double)
    case lineLimit(Int)
    case multilineTextAlignment(TextAlignment)
    case contentTransition(ContentTransition)
    /// The Lock Screen card's background (on the Lock Screen view's root).
    case activityBackgroundTint(LayoutColor)
    /// The color of the system's buttons on the Lock Screen card (on the Lock Screen view's root).
    case activitySystemActionForegroundColor(LayoutColor)

    public struct Font: Hashable, Sendable {
        public var style: TextStyle?
        public var size: Double?
        public var weight: Weight?
        public var design: Design?

        public init(style: TextStyle? = nil, size: Double? = nil, weight: Weight? = nil, design: Design? = nil) {
            self.style = style
            self.size = size
            self.weight = weight
            self.design = design
        }

        /// SwiftUI's text styles, with iOS's default sizes in points.
        public enum TextStyle: String, CaseIterable, Sendable {
            case largeTitle, title, title2, title3, headline, subheadline, body, callout, footnote, caption, caption2

            public var size: Double {
                switch self {
                case .largeTitle: 34
                case .title: 28
                case .title2: 22
                case .title3: 20
                case .headline, .body: 17
                case .subheadline: 15
                case .callout: 16
                case .footnote: 13
                case .caption: 12
                case .caption2: 11
                }
            }

            public var weight: Weight { self == .headline ? .semibold : .regular }
        }

        public enum Weight: String, CaseIterable, Sendable {
            case ultraLight, thin, light, regular, medium, semibold, bold, heavy, black

            /// The CSS weight.
            public var value: Int {
                switch self {
                case .ultraLight: 100
                case .thin: 200
                case .light: 300
                case .regular: 400
                case .medium: 500
                case .semibold: 600
                case .bold: 700
                case .heavy: 800
                case .black: 900
                }
            }
        }

        public enum Design: String, CaseIterable, Sendable {
            case `default`, rounded, monospaced, serif
        }
    }

    /// Padding per edge, in points.
    public struct Edges: Hashable, Sendable {
        public var top, leading, bottom, trailing: Double

        public init(top: Double, leading: Double, bottom: Double, trailing: Double) {
            (self.top, self.leading, self.bottom, self.trailing) = (top, leading, bottom, trailing)
        }
    }

    public struct Frame: Hashable, Sendable {
        public var width, height, minWidth, minHeight: Double?
        /// `nil` for none, `.infinity` for "as wide as there is room".
        public var maxWidth, maxHeight: Double?
        public var alignment: Alignment?

        public init(
            width: Double? = nil, height: Double? = nil, minWidth: Double? = nil, minHeight: Double? = nil,
            maxWidth: Double? = nil, maxHeight: Double? = nil, alignment: Alignment? = nil
        ) {
            (self.width, self.height, self.minWidth, self.minHeight) = (width, height, minWidth, minHeight)
            (self.maxWidth, self.maxHeight, self.alignment) = (maxWidth, maxHeight, alignment)
        }
    }

    public enum Alignment: String, CaseIterable, Sendable {
        case topLeading, top, topTrailing, leading, center, trailing, bottomLeading, bottom, bottomTrailing
    }

    public enum TextAlignment: String, CaseIterable, Sendable {
        case leading, center, trailing
    }

    public enum ContentTransition: Hashable, Sendable {
        /// Digits roll from the old number to the new one, up or down.
        case numericText(countsDown: Bool)
        case opacity
        case identity
    }

    private enum Name: String, CaseIterable {
        case font, monospacedDigit, foregroundStyle, tint, padding, frame, background, cornerRadius, opacity, lineLimit
        case multilineTextAlignment, contentTransition, activityBackgroundTint, activitySystemActionForegroundColor
    }

    /// Modifiers that style the Lock Screen card rather than a view, allowed only on the root.
    public var isCardModifier: Bool {
        switch self {
        case .activityBackgroundTint, .activitySystemActionForegroundColor: true
        default: false
        }
    }

    static func parse(_ value: JSONValue, at path: String) throws(IsletError) -> LayoutModifier {
        guard case .object(let members) = value, members.count == 1, let (key, body) = members.first else {
            throw LayoutReader.error(at: path, "a modifier is an object with one key, such as {\"padding\": 8}")
        }
        let name = try LayoutReader.choice(.string(key), at: path, Name.self)
        let place = "\(path).\(key)"
        switch name {
        case .font: return .font(try parseFont(body, at: place))
        case .monospacedDigit:
            guard body == .bool(true) else { throw LayoutReader.error(at: place, "write {\"monospacedDigit\": true}") }
            return .monospacedDigit
        case .foregroundStyle: return .foregroundStyle(try LayoutColor.parse(body, at: place))
        case .tint: return .tint(try LayoutColor.parse(body, at: place))
        case .padding: return .padding(try parseEdges(body, at: place))
        case .frame: return .frame(try parseFrame(body, at: place))
        case .background: return .background(try LayoutColor.parse(body, at: place))
        case .cornerRadius: return .cornerRadius(try LayoutReader.number(body, at: place, in: 0...200))
        case .opacity: return .opacity(try LayoutReader.number(body, at: place, in: 0...1))
        case .lineLimit: return .lineLimit(Int(try LayoutReader.number(body, at: place, in: 1...20)))
        case .multilineTextAlignment: return .multilineTextAlignment(try LayoutReader.choice(body, at: place, TextAlignment.self))
        case .contentTransition: return .contentTransition(try parseTransition(body, at: place))
        case .activityBackgroundTint: return .activityBackgroundTint(try LayoutColor.parse(body, at: place))
        case .activitySystemActionForegroundColor: return .activitySystemActionForegroundColor(try LayoutColor.parse(body, at: place))
        }
    }

    private static func parseFont(_ value: JSONValue, at path: String) throws(IsletError) -> Font {
        if case .string = value {
            return Font(style: try LayoutReader.choice(value, at: path, Font.TextStyle.self))
        }
        var reader = try LayoutReader(value, at: path, expecting: "a text style name or {size, weight, design}")
        let font = Font(
            style: try reader.choice("style", Font.TextStyle.self),
            size: try reader.number("size", in: 1...200),
            weight: try reader.choice("weight", Font.Weight.self),
            design: try reader.choice("design", Font.Design.self)
        )
        try reader.finish()
        return font
    }

    private static func parseEdges(_ value: JSONValue, at path: String) throws(IsletError) -> Edges {
        if case .object = value {
            var reader = try LayoutReader(value, at: path, expecting: "padding per edge")
            let range = 0.0...200
            let all = try reader.number("all", in: range) ?? 0
            let horizontal = try reader.number("horizontal", in: range) ?? all
            let vertical = try reader.number("vertical", in: range) ?? all
            let edges = Edges(
                top: try reader.number("top", in: range) ?? vertical,
                leading: try reader.number("leading", in: range) ?? horizontal,
                bottom: try reader.number("bottom", in: range) ?? vertical,
                trailing: try reader.number("trailing", in: range) ?? horizontal
            )
            try reader.finish()
            return edges
        }
        // SwiftUI's `.padding()` is 16 points on every edge.
        let length = value == .bool(true) ? 16 : try LayoutReader.number(value, at: path, in: 0...200)
        return Edges(top: length, leading: length, bottom: length, trailing: length)
    }

    private static func parseFrame(_ value: JSONValue, at path: String) throws(IsletError) -> Frame {
        var reader = try LayoutReader(value, at: path, expecting: "a frame")
        let range = 0.0...2000
        func maximum(_ key: String) throws(IsletError) -> Double? {
            if case .string("infinity") = reader.value(key) { return .infinity }
            return try reader.number(key, in: range)
        }
        let frame = Frame(
            width: try reader.number("width", in: range),
            height: try reader.number("height", in: range),
            minWidth: try reader.number("minWidth", in: range),
            minHeight: try reader.number("minHeight", in: range),
            maxWidth: try maximum("maxWidth"),
            maxHeight: try maximum("maxHeight"),
            alignment: try reader.choice("alignment", Alignment.self)
        )
        try reader.finish()
        return frame
    }

    private static func parseTransition(_ value: JSONValue, at path: String) throws(IsletError) -> ContentTransition {
        switch value {
        case .string("numericText"): return .numericText(countsDown: false)
        case .string("opacity"): return .opacity
        case .string("identity"): return .identity
        case .object(let members) where members.keys.first == "numericText" && members.count == 1:
            var reader = try LayoutReader(members["numericText"]!, at: "\(path).numericText", expecting: "{\"countsDown\": …}")
            let countsDown = try reader.bool("countsDown") ?? false
            try reader.finish()
            return .numericText(countsDown: countsDown)
        default:
            throw LayoutReader.error(at: path, "expected numericText, {\"numericText\": {\"countsDown\": true}}, opacity or identity")
        }
    }
}
