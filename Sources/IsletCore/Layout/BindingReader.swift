/// Reads an activity's values for one drawing, and notes each binding that finds nothing its
/// view can draw (a `LayoutWarning`).
///
/// The renderer reads every value and tests every condition through one reader as it draws, so
/// the warnings are those of the views drawn (the branch of an `If` not taken is never read),
/// found in the same pass as the drawing and unable to disagree with it. A binding is expected
/// to find its value unless the layout says it may not:
/// - a value with a `default` (the layout DSL gives a binding of a Swift optional `""`);
/// - a condition that asks whether there is one: `exists`, or `equals`/`notEquals` null.
///
/// A value that is there but of the wrong kind (a string where a number format needs a number)
/// is noted even then: it is there, and wrong.
public struct BindingReader {
    /// What the drawing reads.
    public let scope: LayoutScope
    /// The region being drawn, named in the warnings.
    public var region: Layout.Region
    /// What was noted: one per region, binding and problem, at the first place it was read, so
    /// a field missing from a state that twenty views read is said once per region.
    public private(set) var warnings: [LayoutWarning] = []
    private var noted: Set<String> = []

    /// What a view needs a value to be.
    public enum Need: Sendable {
        case anything, number, date
    }

    public init(scope: LayoutScope, region: Layout.Region = .lockScreen) {
        self.scope = scope
        self.region = region
    }

    /// The value `value` shows (its binding's, else its default; or its literal), noting a
    /// binding that finds nothing without a default, or a value that is not what `need` says.
    /// - Parameter path: Where `value` is in the layout document, for the warning.
    public mutating func read(_ value: LayoutValue, as need: Need, at path: @autoclosure () -> String) -> JSONValue? {
        let shown = value.resolve(in: scope)
        guard case .binding(let binding) = value.source else { return shown }
        let found = scope.value(at: binding)
        if found == nil || found == .null {
            if value.fallback == nil { note(.missing, binding, found: found, at: path()) }
        } else if need == .number && found?.numberValue == nil {
            note(.notANumber, binding, found: found, at: path())
        } else if need == .date, let found, scope.unixSeconds(found) == nil {
            note(.notADate, binding, found: found, at: path())
        }
        return shown
    }

    /// `value` as a number, or nil (noted as `read` notes).
    public mutating func number(_ value: LayoutValue, at path: @autoclosure () -> String) -> Double? {
        read(value, as: .number, at: path())?.numberValue
    }

    /// `value` as a date in Unix seconds, or nil (noted as `read` notes).
    public mutating func date(_ value: LayoutValue, at path: @autoclosure () -> String) -> Double? {
        read(value, as: .date, at: path()).flatMap(scope.unixSeconds)
    }

    /// Whether `condition` holds, as Swift would decide it, noting a comparison whose binding
    /// finds nothing (unless it asks whether there is something) and a number comparison with a
    /// value that is not one. `all` and `any` stop at the first that decides, as `&&` and `||` do,
    /// so a test guarded by an `exists` before it is not read when the value is missing.
    public mutating func holds(_ condition: LayoutCondition, at path: @autoclosure () -> String) -> Bool {
        switch condition {
        case .all(let conditions):
            for (index, condition) in conditions.enumerated() where !holds(condition, at: "\(path()).all[\(index)]") { return false }
            return true
        case .any(let conditions):
            for (index, condition) in conditions.enumerated() where holds(condition, at: "\(path()).any[\(index)]") { return true }
            return false
        case .not(let condition):
            return !holds(condition, at: "\(path()).not")
        case .compare(let binding, let comparison):
            let value = scope.value(at: binding)
            let isThere = value != nil && value != .null
            func need(_ number: Bool = false) {
                if !isThere {
                    note(.missing, binding, found: value, at: "\(path()).bind")
                } else if number && value?.numberValue == nil {
                    note(.notANumber, binding, found: value, at: "\(path()).bind")
                }
            }
            switch comparison {
            case .exists(let expected):
                return isThere == expected
            case .isTrue:
                need()
                return value.map(LayoutCondition.isTruthy) ?? false
            case .equals(.null):
                // Missing or null, as Swift's `nil` is either (and as `exists: false` asks).
                return !isThere
            case .notEquals(.null):
                return isThere
            case .equals(let expected):
                need()
                return value.map { LayoutCondition.same($0, expected) } ?? false
            case .notEquals(let expected):
                need()
                return !(value.map { LayoutCondition.same($0, expected) } ?? false)
            case .greaterThan(let bound):
                need(true)
                return value?.numberValue.map { $0 > bound } ?? false
            case .lessThan(let bound):
                need(true)
                return value?.numberValue.map { $0 < bound } ?? false
            case .atLeast(let bound):
                need(true)
                return value?.numberValue.map { $0 >= bound } ?? false
            case .atMost(let bound):
                need(true)
                return value?.numberValue.map { $0 <= bound } ?? false
            }
        }
    }

    private mutating func note(_ problem: LayoutWarning.Problem, _ binding: BindingPath, found: JSONValue?, at path: String) {
        guard noted.insert("\(region.rawValue) \(binding) \(problem.rawValue)").inserted else { return }
        warnings.append(
            LayoutWarning(region: region, path: path, binding: binding, problem: problem, found: found, dateEncoding: scope.dateEncoding)
        )
    }
}
