/// A value a view shows: a literal, or a binding into the activity with an optional format.
///
/// Written as a JSON literal (`"Speed"`, `42`, `true`) or as
/// `{"bind": "state.speed", "format": {"number": {"precision": 1, "unit": "km/h"}}, "default": "–"}`.
/// A binding reads `attributes…`, `state…` or `isStale`; `default` is shown when the value is
/// missing or null.
public struct LayoutValue: Hashable, Sendable {
    public enum Source: Hashable, Sendable {
        case literal(JSONValue)
        case binding(BindingPath)
    }

    public var source: Source
    public var format: ValueFormat?
    public var fallback: JSONValue?

    public init(source: Source, format: ValueFormat? = nil, fallback: JSONValue? = nil) {
        self.source = source
        self.format = format
        self.fallback = fallback
    }

    /// A literal value.
    public static func literal(_ value: JSONValue) -> LayoutValue { LayoutValue(source: .literal(value)) }

    /// The value in `scope`, or the fallback, or nil.
    public func resolve(in scope: LayoutScope) -> JSONValue? {
        let value: JSONValue? =
            switch source {
            case .literal(let literal): literal
            case .binding(let path): scope.value(at: path)
            }
        if let value, value != .null { return value }
        return fallback
    }

    static func parse(_ value: JSONValue, at path: String) throws(IsletError) -> LayoutValue {
        switch value {
        case .string, .integer, .number, .bool:
            return .literal(value)
        case .object:
            var reader = try LayoutReader(value, at: path, expecting: "a value")
            guard case .string(let binding) = try reader.required("bind", "a path such as \"state.speed\"") else {
                throw LayoutReader.error(at: reader.place("bind"), "expected a path such as \"state.speed\"")
            }
            let bound = try BindingPath.parse(binding, at: reader.place("bind"))
            let format = try reader.value("format").map { value throws(IsletError) in
                try ValueFormat.parse(value, at: reader.place("format"))
            }
            let fallback = reader.value("default")
            switch fallback {
            case .array?, .object?: throw LayoutReader.error(at: reader.place("default"), "expected a literal")
            default: break
            }
            try reader.finish()
            return LayoutValue(source: .binding(bound), format: format, fallback: fallback)
        default:
            throw LayoutReader.error(at: path, "expected a literal or {\"bind\": …}, got \(value.typeName)")
        }
    }
}

/// Where a binding reads: `attributes.order.id`, `state.riders[0].name`, `isStale`.
public struct BindingPath: Hashable, Sendable, CustomStringConvertible {
    public enum Root: String, Sendable {
        case attributes, state, isStale
    }

    public enum Step: Hashable, Sendable {
        case member(String)
        case index(Int)
    }

    public var root: Root
    public var steps: [Step]

    public var description: String {
        steps.reduce(root.rawValue) { text, step in
            switch step {
            case .member(let name): "\(text).\(name)"
            case .index(let index): "\(text)[\(index)]"
            }
        }
    }

    static func parse(_ text: String, at path: String) throws(IsletError) -> BindingPath {
        var steps: [Step] = []
        var rootName: Substring?
        for part in text.split(separator: ".", omittingEmptySubsequences: false) {
            var name = part
            var indices: [Int] = []
            while name.hasSuffix("]"), let open = name.lastIndex(of: "[") {
                guard let index = Int(name[name.index(after: open)..<name.index(before: name.endIndex)]), index >= 0 else {
                    throw LayoutReader.error(at: path, "\"\(text)\": an index is a number, as in state.items[0]")
                }
                indices.insert(index, at: 0)
                name = name[..<open]
            }
            guard !name.isEmpty else { throw LayoutReader.error(at: path, "\"\(text)\" has an empty step") }
            if rootName == nil { rootName = name } else { steps.append(.member(String(name))) }
            steps += indices.map(Step.index)
        }
        guard let rootName, let root = Root(rawValue: String(rootName)) else {
            throw LayoutReader.error(at: path, "\"\(text)\" must start with attributes, state or isStale")
        }
        if root == .isStale && !steps.isEmpty { throw LayoutReader.error(at: path, "isStale has no fields") }
        return BindingPath(root: root, steps: steps)
    }
}

/// What bindings read: one activity's attributes, content state and staleness.
public struct LayoutScope: Sendable {
    public var attributes: JSONValue
    public var state: JSONValue
    public var isStale: Bool
    public var dateEncoding: DateEncoding

    public init(attributes: JSONValue, state: JSONValue, isStale: Bool, dateEncoding: DateEncoding = .secondsSince2001) {
        self.attributes = attributes
        self.state = state
        self.isStale = isStale
        self.dateEncoding = dateEncoding
    }

    public func value(at path: BindingPath) -> JSONValue? {
        var value: JSONValue
        switch path.root {
        case .attributes: value = attributes
        case .state: value = state
        case .isStale: return .bool(isStale)
        }
        for step in path.steps {
            switch (step, value) {
            case (.member(let name), .object(let members)):
                guard let member = members[name] else { return nil }
                value = member
            case (.index(let index), .array(let items)):
                guard items.indices.contains(index) else { return nil }
                value = items[index]
            default:
                return nil
            }
        }
        return value
    }

    /// A value read as a date, in Unix seconds, by the layout's date encoding; `nil` when it is
    /// not a number or not a date Islet can draw (outside `WireFormat.dateRange`), so a payload's
    /// 1e300 is drawn as a missing value rather than reaching a formatter or a clock.
    public func unixSeconds(_ value: JSONValue) -> Double? {
        guard let number = value.numberValue else { return nil }
        let seconds = dateEncoding.unixSeconds(number)
        return WireFormat.isAcceptedDate(seconds) ? seconds : nil
    }
}

/// How the numbers that a layout reads as dates count time.
///
/// The default is Swift's: `JSONEncoder` writes a `Date` as seconds since 2001-01-01, so a
/// content state encoded by an iOS app, IsletKit or a Swift server reads right. Providers in
/// other languages usually send Unix seconds or milliseconds.
public enum DateEncoding: String, CaseIterable, Sendable {
    case secondsSince2001
    case secondsSince1970
    case millisecondsSince1970

    /// Seconds from 1970 to 2001-01-01.
    static let referenceOffset = 978_307_200.0

    public func unixSeconds(_ number: Double) -> Double {
        switch self {
        case .secondsSince2001: number + Self.referenceOffset
        case .secondsSince1970: number
        case .millisecondsSince1970: number / 1000
        }
    }
}

extension JSONValue {
    /// The value as a number, if it is one.
    public var numberValue: Double? {
        switch self {
        case .integer(let integer): Double(integer)
        case .number(let number): number
        default: nil
        }
    }
}
