import Foundation
import IsletCore

/// A color: a system color that adapts to light and dark, a hex value, or a light/dark pair.
public struct Color: Sendable {
    let json: JSONValue
    public static let red = Color(json: "red"), orange = Color(json: "orange"), yellow = Color(json: "yellow")
    public static let green = Color(json: "green"), mint = Color(json: "mint"), teal = Color(json: "teal")
    public static let cyan = Color(json: "cyan"), blue = Color(json: "blue"), indigo = Color(json: "indigo")
    public static let purple = Color(json: "purple"), pink = Color(json: "pink"), brown = Color(json: "brown")
    public static let gray = Color(json: "gray"), white = Color(json: "white"), black = Color(json: "black")
    public static let clear = Color(json: "clear"), primary = Color(json: "primary"), secondary = Color(json: "secondary")
    /// `#RGB`, `#RRGGBB` or `#RRGGBBAA`.
    public init(hex: String) { json = .string(hex) }
    /// One color in light appearance, another in dark.
    public init(light: Color, dark: Color) { json = ["light": light.json, "dark": dark.json] }
    private init(json: JSONValue) { self.json = json }
}

public enum FontWeight: String, Sendable { case ultraLight, thin, light, regular, medium, semibold, bold, heavy, black }
public enum FontDesign: String, Sendable { case `default`, rounded, monospaced, serif }

/// A text style or a size.
public struct Font: Sendable {
    let json: JSONValue
    public static let largeTitle = Font(json: "largeTitle"), title = Font(json: "title"), title2 = Font(json: "title2")
    public static let title3 = Font(json: "title3"), headline = Font(json: "headline"), subheadline = Font(json: "subheadline")
    public static let body = Font(json: "body"), callout = Font(json: "callout"), footnote = Font(json: "footnote")
    public static let caption = Font(json: "caption"), caption2 = Font(json: "caption2")
    public static func system(size: Double, weight: FontWeight = .regular, design: FontDesign = .default) -> Font {
        Font(json: ["size": .number(size), "weight": .string(weight.rawValue), "design": .string(design.rawValue)])
    }
}

/// How a view's change animates.
public struct ContentTransition: Sendable {
    let json: JSONValue
    public static func numericText(countsDown: Bool = false) -> ContentTransition {
        ContentTransition(json: countsDown ? ["numericText": ["countsDown": true]] : "numericText")
    }
    public static let opacity = ContentTransition(json: "opacity")
    public static let identity = ContentTransition(json: "identity")
}

/// An edge set for padding.
public enum Edge: String, Sendable { case all, horizontal, vertical, top, leading, bottom, trailing }

extension LayoutNode {
    public func font(_ font: Font) -> LayoutNode { modified("font", font.json) }
    public func monospacedDigit() -> LayoutNode { modified("monospacedDigit", true) }
    public func foregroundStyle(_ color: Color) -> LayoutNode { modified("foregroundStyle", color.json) }
    public func tint(_ color: Color) -> LayoutNode { modified("tint", color.json) }
    public func padding(_ points: Double = 16) -> LayoutNode { modified("padding", .number(points)) }
    public func padding(_ edge: Edge, _ points: Double = 16) -> LayoutNode { modified("padding", [edge.rawValue: .number(points)]) }
    public func background(_ color: Color) -> LayoutNode { modified("background", color.json) }
    public func cornerRadius(_ points: Double) -> LayoutNode { modified("cornerRadius", .number(points)) }
    public func opacity(_ value: Double) -> LayoutNode { modified("opacity", .number(value)) }
    public func lineLimit(_ lines: Int) -> LayoutNode { modified("lineLimit", .integer(Int64(lines))) }
    public func contentTransition(_ transition: ContentTransition) -> LayoutNode { modified("contentTransition", transition.json) }
    public func activityBackgroundTint(_ color: Color) -> LayoutNode { modified("activityBackgroundTint", color.json) }
    public func activitySystemActionForegroundColor(_ color: Color) -> LayoutNode {
        modified("activitySystemActionForegroundColor", color.json)
    }

    /// A frame; `.infinity` for as much room as there is.
    public func frame(
        width: Double? = nil, height: Double? = nil, maxWidth: Double? = nil, maxHeight: Double? = nil, alignment: Alignment = .center
    ) -> LayoutNode {
        var frame: [String: JSONValue] = ["alignment": .string(alignment.rawValue)]
        func size(_ value: Double) -> JSONValue { value.isInfinite ? "infinity" : .number(value) }
        if let width { frame["width"] = size(width) }
        if let height { frame["height"] = size(height) }
        if let maxWidth { frame["maxWidth"] = size(maxWidth) }
        if let maxHeight { frame["maxHeight"] = size(maxHeight) }
        return modified("frame", .object(frame))
    }
}
