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
    public var isTrue: LayoutCondition { LayoutCondition { try whenThere(["bind": .string(try path())]) } }
}

extension Bound where Value: Encodable {
    /// Equal to `value`, compared as `JSONEncoder` encodes it (an enum case, a string, a number).
    public static func == (lhs: Bound, rhs: Value) -> LayoutCondition {
        ProbeSamples.record(rhs)
        let value = Result { try Wire.json(rhs) }
        return LayoutCondition { try lhs.whenThere(try equality(lhs.path(), try value.get())) }
    }
    public static func != (lhs: Bound, rhs: Value) -> LayoutCondition {
        ProbeSamples.record(rhs)
        let value = Result { try Wire.json(rhs) }
        return LayoutCondition { ["not": try lhs.whenThere(try equality(lhs.path(), try value.get()))] }
    }
}

extension Bound {
    /// `test`, asked only when the value is there if it may be missing: Swift's `nil == x` is
    /// false without a word, and so is the layout's (an `exists` first, which `all` stops at).
    fileprivate func whenThere(_ test: JSONValue) throws -> JSONValue {
        guard mayBeMissing, test["exists"] == nil else { return test }
        return ["all": [["bind": .string(try path()), "exists": true], test]]
    }
}

/// `path` equals `value`: a scalar compares as it is; a case of an enum without raw values, which
/// `JSONEncoder` writes `{"failed": {}}`, is there when its key is.
private func equality(_ path: String, _ value: JSONValue) throws -> JSONValue {
    guard case .object(let fields) = value else { return ["bind": .string(path), "equals": value] }
    guard fields.count == 1, let (name, payload) = fields.first, payload == [:] else {
        throw LayoutDSLError("\(path): a layout compares with a string, a number, a Bool or an enum case without associated values")
    }
    return ["bind": .string("\(path).\(name)"), "exists": true]
}

extension Bound where Value: BinaryFloatingPoint {
    public static func > (lhs: Bound, rhs: Double) -> LayoutCondition { lhs.compared("greaterThan", rhs) }
    public static func < (lhs: Bound, rhs: Double) -> LayoutCondition { lhs.compared("lessThan", rhs) }
}

extension Bound where Value: BinaryInteger {
    public static func > (lhs: Bound, rhs: Double) -> LayoutCondition { lhs.compared("greaterThan", rhs) }
    public static func < (lhs: Bound, rhs: Double) -> LayoutCondition { lhs.compared("lessThan", rhs) }
}

extension Bound {
    fileprivate func compared(_ comparison: String, _ number: Double) -> LayoutCondition {
        LayoutCondition { try whenThere(.object(["bind": .string(try path()), comparison: .number(number)])) }
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
