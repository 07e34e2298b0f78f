import Foundation
import IsletCore

/// A view of a layout: one node of the layout document ([layouts.md]), with its modifiers.
public struct LayoutNode: Sendable {
    var fields: [String: JSONValue]
    var modifiers: [JSONValue] = []
    var error: LayoutDSLError?

    init(_ type: String, _ fields: [String: JSONValue] = [:]) {
        self.fields = fields.merging(["type": .string(type)]) { _, new in new }
    }

    init(failing error: any Error) {
        fields = ["type": "Spacer"]
        self.error = (error as? LayoutDSLError) ?? LayoutDSLError("\(error)")
    }

    /// The node as the document's JSON; throws the first binding that could not be named.
    func json() throws -> JSONValue {
        if let error { throw error }
        var object = fields
        if !modifiers.isEmpty { object["modifiers"] = .array(modifiers) }
        return .object(object)
    }

    func modified(_ name: String, _ value: JSONValue) -> LayoutNode {
        var copy = self
        copy.modifiers.append([name: value])
        return copy
    }

    static func building(_ type: String, _ make: () throws -> [String: JSONValue]) -> LayoutNode {
        do { return LayoutNode(type, try make()) } catch { return LayoutNode(failing: error) }
    }
}

/// Builds views from the statements of a closure, as SwiftUI's `ViewBuilder`.
@resultBuilder
public enum LayoutBuilder {
    public static func buildExpression(_ node: LayoutNode) -> [LayoutNode] { [node] }
    public static func buildExpression(_ nodes: [LayoutNode]) -> [LayoutNode] { nodes }
    public static func buildBlock(_ parts: [LayoutNode]...) -> [LayoutNode] { parts.flatMap { $0 } }
    public static func buildOptional(_ part: [LayoutNode]?) -> [LayoutNode] { part ?? [] }
    public static func buildEither(first part: [LayoutNode]) -> [LayoutNode] { part }
    public static func buildEither(second part: [LayoutNode]) -> [LayoutNode] { part }
    public static func buildArray(_ parts: [[LayoutNode]]) -> [LayoutNode] { parts.flatMap { $0 } }
}

/// One view from several: a single one as is, several in a `VStack`, none as an empty one.
func single(_ nodes: [LayoutNode]) -> LayoutNode {
    nodes.count == 1 ? nodes[0] : VStack { nodes }
}

func children(_ nodes: [LayoutNode]) throws -> JSONValue {
    .array(try nodes.map { try $0.json() })
}

public enum HorizontalAlignment: String, Sendable { case leading, center, trailing }
public enum VerticalAlignment: String, Sendable { case top, center, bottom }
public enum Alignment: String, Sendable {
    case topLeading, top, topTrailing, leading, center, trailing, bottomLeading, bottom, bottomTrailing
}

public func VStack(alignment: HorizontalAlignment = .center, spacing: Double? = nil, @LayoutBuilder content: () -> [LayoutNode]) -> LayoutNode {
    let nodes = content()
    return .building("VStack") {
        var fields: [String: JSONValue] = ["children": try children(nodes), "alignment": .string(alignment.rawValue)]
        if let spacing { fields["spacing"] = .number(spacing) }
        return fields
    }
}

public func HStack(alignment: VerticalAlignment = .center, spacing: Double? = nil, @LayoutBuilder content: () -> [LayoutNode]) -> LayoutNode {
    let nodes = content()
    return .building("HStack") {
        var fields: [String: JSONValue] = ["children": try children(nodes), "alignment": .string(alignment.rawValue)]
        if let spacing { fields["spacing"] = .number(spacing) }
        return fields
    }
}

public func ZStack(alignment: Alignment = .center, @LayoutBuilder content: () -> [LayoutNode]) -> LayoutNode {
    let nodes = content()
    return .building("ZStack") { ["children": try children(nodes), "alignment": .string(alignment.rawValue)] }
}

/// Text: a literal, or a bound value with a format.
public func Text(_ literal: String) -> LayoutNode {
    LayoutNode("Text", ["text": .string(literal)])
}

public func Text<Root, Value>(_ value: Bound<Root, Value>, format: ValueFormatStyle? = nil) -> LayoutNode {
    .building("Text") { ["text": try value.binding(format: format?.json)] }
}

/// A date shown as a timer, a relative time, a time or a date, kept current by the display.
public func Text<Root>(_ date: Bound<Root, Date>, style: DateStyle) -> LayoutNode {
    .building("Text") { ["date": try date.binding(), "style": .string(style.rawValue)] }
}

/// An optional date: nothing is shown, and no warning given, while it is nil.
public func Text<Root>(_ date: Bound<Root, Date?>, style: DateStyle) -> LayoutNode {
    .building("Text") { ["date": try date.binding(), "style": .string(style.rawValue)] }
}

/// A timer counting down to (or up from) the interval's bounds.
public func Text<Root>(timerInterval start: Bound<Root, Date>, _ end: Bound<Root, Date>, countsDown: Bool = true) -> LayoutNode {
    .building("Text") {
        ["timerInterval": ["start": try start.binding(), "end": try end.binding()], "countsDown": .bool(countsDown)]
    }
}

public enum DateStyle: String, Sendable { case timer, relative, offset, time, date }

/// How a bound value reads.
public struct ValueFormatStyle: Sendable {
    let json: JSONValue
    public static func number(precision: Int? = nil, unit: String? = nil) -> ValueFormatStyle {
        var options: [String: JSONValue] = [:]
        if let precision { options["precision"] = .integer(Int64(precision)) }
        if let unit { options["unit"] = .string(unit) }
        return ValueFormatStyle(json: options.isEmpty ? "number" : ["number": .object(options)])
    }
    public static func percent(precision: Int = 0) -> ValueFormatStyle { ValueFormatStyle(json: ["percent": ["precision": .integer(Int64(precision))]]) }
    public static let duration = ValueFormatStyle(json: "duration")
    public static let relative = ValueFormatStyle(json: "relative")
}

public func Image(systemName: String) -> LayoutNode {
    LayoutNode("Image", ["systemName": .string(systemName)])
}

public func Spacer(minLength: Double? = nil) -> LayoutNode {
    LayoutNode("Spacer", minLength.map { ["minLength": .number($0)] } ?? [:])
}

public func ProgressView<Root, Value: BinaryFloatingPoint>(value: Bound<Root, Value>, total: Double = 1) -> LayoutNode {
    .building("ProgressView") { ["value": try value.binding(), "total": .number(total)] }
}

/// Progress out of a bound total: `ProgressView(value: context.state.done, total: context.state.steps)`.
public func ProgressView<Root, Value: BinaryFloatingPoint, Total: BinaryFloatingPoint>(
    value: Bound<Root, Value>, total: Bound<Root, Total>
) -> LayoutNode {
    .building("ProgressView") { ["value": try value.binding(), "total": try total.binding()] }
}

public func ProgressView<Root>(timerInterval start: Bound<Root, Date>, _ end: Bound<Root, Date>, countsDown: Bool = false) -> LayoutNode {
    .building("ProgressView") {
        ["timerInterval": ["start": try start.binding(), "end": try end.binding()], "countsDown": .bool(countsDown)]
    }
}
