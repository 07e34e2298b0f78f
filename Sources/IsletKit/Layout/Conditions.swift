import Foundation
import IsletCore

/// A condition on bound values, evaluated by the renderer for each content: `If`'s test.
public struct LayoutCondition: Sendable {
    let make: @Sendable () throws -> JSONValue

    public static func && (lhs: LayoutCondition, rhs: LayoutCondition) -> LayoutCondition {
        LayoutCondition { ["all": [try lhs.make(), try rhs.make()]] }
    }
    public static func || (lhs: LayoutCondition, rhs: LayoutCondition) -> LayoutCondition {
        LayoutCondition { ["any": [try lhs.make(), try rhs.make()]] }
    }
    public static prefix func ! (condition: LayoutCondition) -> LayoutCondition {
        LayoutCondition { ["not": try condition.make()] }
    }
}

extension Bound where Value == Bool {
    /// Holds when the value is true.
    public var isTrue: LayoutCondition { LayoutCondition { ["bind": .string(try path())] } }
}

extension Bound where Value: Encodable {
    /// Equal to `value`, compared as `JSONEncoder` encodes it (an enum case, a string, a number).
    public static func == (lhs: Bound, rhs: Value) -> LayoutCondition {
        let value = Result { try Wire.json(rhs) }
        return LayoutCondition { ["bind": .string(try lhs.path()), "equals": try value.get()] }
    }
    public static func != (lhs: Bound, rhs: Value) -> LayoutCondition {
        let value = Result { try Wire.json(rhs) }
        return LayoutCondition { ["bind": .string(try lhs.path()), "notEquals": try value.get()] }
    }
}

extension Bound where Value: BinaryFloatingPoint {
    public static func > (lhs: Bound, rhs: Double) -> LayoutCondition {
        LayoutCondition { ["bind": .string(try lhs.path()), "greaterThan": .number(rhs)] }
    }
    public static func < (lhs: Bound, rhs: Double) -> LayoutCondition {
        LayoutCondition { ["bind": .string(try lhs.path()), "lessThan": .number(rhs)] }
    }
}

/// One view or the other, chosen for each content by the renderer (Swift's own `if` in a layout
/// is decided once, when the layout is built).
public func If(_ condition: LayoutCondition, @LayoutBuilder then: () -> [LayoutNode], @LayoutBuilder else otherwise: () -> [LayoutNode] = { [] }) -> LayoutNode {
    let yes = single(then())
    let no = otherwise()
    return .building("If") {
        var fields: [String: JSONValue] = ["condition": try condition.make(), "then": try yes.json()]
        if !no.isEmpty { fields["else"] = try single(no).json() }
        return fields
    }
}
