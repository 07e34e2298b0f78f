/// Reads one JSON object of a layout document, naming the place of anything wrong.
///
/// Every refusal is an `invalidLayout` error whose message starts with the path to the bad
/// node, such as `lockScreen.children[1].modifiers[0].font.weight`, so a person can go straight
/// to it. Keys the reader was not asked about are refused too: a misspelled modifier or field
/// must not be silently ignored.
struct LayoutReader {
    let path: String
    private let members: [String: JSONValue]
    private var read: Set<String> = []

    init(_ value: JSONValue, at path: String, expecting what: String) throws(IsletError) {
        guard case .object(let members) = value else {
            throw Self.error(at: path, "expected \(what) (an object), got \(value.typeName)")
        }
        self.path = path
        self.members = members
    }

    static func error(at path: String, _ problem: String) -> IsletError {
        IsletError(.invalidLayout, "\(path.isEmpty ? "the layout" : path): \(problem)")
    }

    func error(_ problem: String) -> IsletError { Self.error(at: path, problem) }

    func place(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    var keys: [String] { members.keys.sorted() }

    /// A member's raw value, marking it as read.
    mutating func value(_ key: String) -> JSONValue? {
        read.insert(key)
        guard let value = members[key], value != .null else { return nil }
        return value
    }

    mutating func required(_ key: String, _ what: String) throws(IsletError) -> JSONValue {
        guard let value = value(key) else { throw Self.error(at: place(key), "missing; expected \(what)") }
        return value
    }

    mutating func string(_ key: String) throws(IsletError) -> String? {
        guard let value = value(key) else { return nil }
        guard case .string(let text) = value else { throw Self.error(at: place(key), "expected a string, got \(value.typeName)") }
        return text
    }

    mutating func number(_ key: String, in range: ClosedRange<Double>) throws(IsletError) -> Double? {
        guard let value = value(key) else { return nil }
        return try Self.number(value, at: place(key), in: range)
    }

    mutating func bool(_ key: String) throws(IsletError) -> Bool? {
        guard let value = value(key) else { return nil }
        guard case .bool(let flag) = value else { throw Self.error(at: place(key), "expected true or false, got \(value.typeName)") }
        return flag
    }

    /// One of `choices`, by name.
    mutating func choice<Choice: RawRepresentable & CaseIterable>(_ key: String, _: Choice.Type) throws(IsletError) -> Choice?
    where Choice.RawValue == String {
        guard let value = value(key) else { return nil }
        return try Self.choice(value, at: place(key), Choice.self)
    }

    mutating func array(_ key: String) throws(IsletError) -> [JSONValue]? {
        guard let value = value(key) else { return nil }
        guard case .array(let items) = value else { throw Self.error(at: place(key), "expected an array, got \(value.typeName)") }
        return items
    }

    /// Refuses keys that were never read.
    func finish() throws(IsletError) {
        if let unknown = members.keys.sorted().first(where: { !read.contains($0) }) {
            throw Self.error(at: place(unknown), "unknown field")
        }
    }

    static func number(_ value: JSONValue, at path: String, in range: ClosedRange<Double>) throws(IsletError) -> Double {
        let number: Double
        switch value {
        case .integer(let integer): number = Double(integer)
        case .number(let double): number = double
        default: throw error(at: path, "expected a number, got \(value.typeName)")
        }
        guard range.contains(number) else {
            throw error(at: path, "\(number.formatted) is out of range; use \(range.lowerBound.formatted)…\(range.upperBound.formatted)")
        }
        return number
    }

    static func choice<Choice: RawRepresentable & CaseIterable>(_ value: JSONValue, at path: String, _: Choice.Type) throws(IsletError)
        -> Choice
    where Choice.RawValue == String {
        let names = Choice.allCases.map(\.rawValue)
        guard case .string(let name) = value else {
            throw error(at: path, "expected one of \(names.joined(separator: ", ")), got \(value.typeName)")
        }
        guard let choice = Choice(rawValue: name) else {
            throw error(at: path, "unknown value \"\(name)\"; use one of \(names.joined(separator: ", "))")
        }
        return choice
    }
}

extension Double {
    /// The number as a person writes it: `4` rather than `4.0`.
    var formatted: String {
        rounded() == self && abs(self) < 1e15 ? String(Int64(self)) : String(self)
    }
}
