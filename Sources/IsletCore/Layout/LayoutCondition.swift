/// A test on the activity's values, for `If` views: SwiftUI's `if` / `else` on state.
///
/// Written as `{"bind": "state.status", "equals": "failed"}` (also `notEquals`, `greaterThan`,
/// `lessThan`, `atLeast`, `atMost`, `exists`), `{"bind": "isStale"}` alone for "is true",
/// or combined: `{"all": [...]}`, `{"any": [...]}`, `{"not": {...}}`.
public indirect enum LayoutCondition: Hashable, Sendable {
    case compare(BindingPath, Comparison)
    case all([LayoutCondition])
    case any([LayoutCondition])
    case not(LayoutCondition)

    public enum Comparison: Hashable, Sendable {
        case isTrue
        case exists(Bool)
        case equals(JSONValue)
        case notEquals(JSONValue)
        case greaterThan(Double)
        case lessThan(Double)
        case atLeast(Double)
        case atMost(Double)
    }

    /// Whether the condition holds for the activity in `scope` (the renderer tests it through
    /// its `BindingReader`, which also notes what the test found missing).
    public func holds(in scope: LayoutScope) -> Bool {
        var reader = BindingReader(scope: scope)
        return reader.holds(self, at: "condition")
    }

    /// `true`, a non-zero number, a non-empty string or array, any object.
    static func isTruthy(_ value: JSONValue) -> Bool {
        switch value {
        case .null: false
        case .bool(let flag): flag
        case .integer(let integer): integer != 0
        case .number(let number): number != 0
        case .string(let text): !text.isEmpty
        case .array(let items): !items.isEmpty
        case .object: true
        }
    }

    /// Equality where 3 and 3.0 are the same number.
    static func same(_ left: JSONValue, _ right: JSONValue) -> Bool {
        if let left = left.numberValue, let right = right.numberValue { return left == right }
        return left == right
    }

    private static let comparisons = ["equals", "notEquals", "greaterThan", "lessThan", "atLeast", "atMost", "exists"]

    static func parse(_ value: JSONValue, at path: String) throws(IsletError) -> LayoutCondition {
        var reader = try LayoutReader(value, at: path, expecting: "a condition")
        let condition: LayoutCondition
        if let items = try reader.array("all") {
            condition = .all(try parseAll(items, at: reader.place("all")))
        } else if let items = try reader.array("any") {
            condition = .any(try parseAll(items, at: reader.place("any")))
        } else if let inner = reader.value("not") {
            condition = .not(try parse(inner, at: reader.place("not")))
        } else if let bind = try reader.string("bind") {
            let bound = try BindingPath.parse(bind, at: reader.place("bind"))
            let given = Self.comparisons.filter { reader.keys.contains($0) }
            guard given.count <= 1 else {
                throw reader.error("give one comparison, not \(given.joined(separator: " and "))")
            }
            condition = .compare(bound, try comparison(given.first, reader: &reader))
        } else {
            throw reader.error("expected {\"bind\": …} with a comparison, or all, any, not")
        }
        try reader.finish()
        return condition
    }

    private static func comparison(_ name: String?, reader: inout LayoutReader) throws(IsletError) -> Comparison {
        guard let name else { return .isTrue }
        let place = reader.place(name)
        let operand = reader.value(name) ?? .null
        switch name {
        case "equals", "notEquals":
            switch operand {
            case .string, .integer, .number, .bool, .null:
                return name == "equals" ? .equals(operand) : .notEquals(operand)
            default:
                throw LayoutReader.error(at: place, "compare with a string, number, true, false or null")
            }
        case "exists":
            guard case .bool(let flag) = operand else { throw LayoutReader.error(at: place, "expected true or false") }
            return .exists(flag)
        default:
            let bound = try LayoutReader.number(operand, at: place, in: -Double.greatestFiniteMagnitude...Double.greatestFiniteMagnitude)
            switch name {
            case "greaterThan": return .greaterThan(bound)
            case "lessThan": return .lessThan(bound)
            case "atLeast": return .atLeast(bound)
            default: return .atMost(bound)
            }
        }
    }

    private static func parseAll(_ items: [JSONValue], at path: String) throws(IsletError) -> [LayoutCondition] {
        guard !items.isEmpty else { throw LayoutReader.error(at: path, "expected at least one condition") }
        var conditions: [LayoutCondition] = []
        for (index, item) in items.enumerated() {
            conditions.append(try parse(item, at: "\(path)[\(index)]"))
        }
        return conditions
    }
}
