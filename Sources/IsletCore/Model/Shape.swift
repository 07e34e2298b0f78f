import Foundation

/// The shape of an activity type's attributes or content state: what the app's `Codable` types
/// decode, so Islet can tell — as a device would when decoding fails — that a payload does not fit.
///
/// Written compactly in JSON:
/// - `"string"`, `"number"`, `"integer"`, `"boolean"`, `"date"`, `"any"` — a `?` suffix makes a
///   field optional (`"number?"`); `"date"` is a number, as `JSONDecoder`'s default
///   `deferredToDate` strategy reads a `Date` (seconds since 2001-01-01);
/// - `["string"]` — an array of that shape;
/// - `{"enum": ["pending", "running"]}` — one of these strings (a Swift `String` enum);
/// - `{"field": shape, …}` — an object with these fields; fields it does not name are allowed, as
///   `JSONDecoder` ignores them.
public indirect enum Shape: Hashable, Sendable {
    case string
    case number
    case integer
    case boolean
    case date
    case any
    case optional(Shape)
    case array(Shape)
    case oneOf([String])
    case object([String: Shape])

    /// Where a value does not fit, and how.
    public struct Mismatch: Error, Hashable, Sendable, CustomStringConvertible {
        /// The path of the value that does not fit, such as `content-state.status`.
        public var path: String
        /// What was expected and what was found.
        public var problem: String

        public var description: String { "\(path): \(problem)" }
    }

    /// The first place where `value` does not fit this shape, if any.
    /// - Parameter path: The name of `value` in messages.
    public func mismatch(in value: JSONValue, at path: String) -> Mismatch? {
        switch (self, value) {
        case (.any, _):
            return nil
        case (.optional(let wrapped), _):
            return value == .null ? nil : wrapped.mismatch(in: value, at: path)
        case (.string, .string), (.boolean, .bool), (.integer, .integer):
            return nil
        case (.number, .integer), (.number, .number), (.date, .integer), (.date, .number):
            return nil
        case (.integer, .number(let number)) where number.rounded() == number:
            return nil
        case (.oneOf(let cases), .string(let text)):
            return cases.contains(text)
                ? nil
                : Mismatch(path: path, problem: "expected one of \(cases.joined(separator: ", ")), got \"\(text)\"")
        case (.array(let element), .array(let items)):
            for (index, item) in items.enumerated() {
                if let mismatch = element.mismatch(in: item, at: "\(path)[\(index)]") { return mismatch }
            }
            return nil
        case (.object(let fields), .object(let members)):
            for name in fields.keys.sorted() {
                let field = fields[name]!
                guard let member = members[name] else {
                    if case .optional = field { continue }
                    if case .any = field { continue }
                    return Mismatch(path: "\(path).\(name)", problem: "missing (\(field.expectation))")
                }
                if let mismatch = field.mismatch(in: member, at: "\(path).\(name)") { return mismatch }
            }
            return nil
        default:
            return Mismatch(path: path, problem: "expected \(expectation), got \(value.typeName)")
        }
    }

    /// The same shape with optionals not nested: an optional optional is just optional, and
    /// its compact form (`"string?"`) must read back as the shape it came from.
    var canonical: Shape {
        if case .optional(.optional(let wrapped)) = self { return Shape.optional(wrapped).canonical }
        return self
    }

    /// What the shape expects, in words.
    public var expectation: String {
        switch self {
        case .string: "a string"
        case .number: "a number"
        case .integer: "an integer"
        case .boolean: "true or false"
        case .date: "a date (a number of seconds since 2001-01-01, JSONDecoder's default)"
        case .any: "any value"
        case .optional(let wrapped): "\(wrapped.expectation) or nothing"
        case .array(let element): "an array of \(element.expectation)"
        case .oneOf(let cases): "one of \(cases.joined(separator: ", "))"
        case .object: "an object"
        }
    }
}

extension Shape: Codable {
    private static let names: [String: Shape] = [
        "string": .string, "number": .number, "integer": .integer, "boolean": .boolean, "date": .date, "any": .any,
    ]

    public init(from decoder: any Decoder) throws {
        let value = try JSONValue(from: decoder)
        self = try Self.parse(value, path: decoder.codingPath.map(\.stringValue).joined(separator: "."))
    }

    public func encode(to encoder: any Encoder) throws {
        try json.encode(to: encoder)
    }

    /// The compact JSON form.
    public var json: JSONValue {
        switch self {
        case .string, .number, .integer, .boolean, .date, .any:
            .string(Self.names.first { $0.value == self }!.key)
        case .optional(let wrapped):
            if case .string(let name) = wrapped.json { .string(name + "?") } else { ["optional": wrapped.json] }
        case .array(let element): .array([element.json])
        case .oneOf(let cases): ["enum": .array(cases.map(JSONValue.string))]
        case .object(let fields): .object(fields.mapValues(\.json))
        }
    }

    /// Reads the compact JSON form, naming the place of anything it cannot read.
    public static func parse(_ value: JSONValue, path: String = "") throws(IsletError) -> Shape {
        let place = path.isEmpty ? "the shape" : path
        switch value {
        case .string(let name):
            // Optional is idempotent: `"string??"` is `"string?"` (an earlier version stored that form).
            let base = String(name.reversed().drop { $0 == "?" }.reversed())
            let optional = base.count < name.count
            guard let shape = names[base] else {
                throw IsletError(
                    .invalidRequest,
                    "\(place): unknown type \"\(name)\"; use string, number, integer, boolean, date or any, with ? for optional."
                )
            }
            return optional ? .optional(shape) : shape
        case .array(let items):
            guard items.count == 1 else {
                throw IsletError(.invalidRequest, "\(place): an array shape names its element's shape once, like [\"string\"].")
            }
            return .array(try parse(items[0], path: path + "[]"))
        case .object(let members):
            if members.count == 1, let cases = members["enum"] {
                guard case .array(let items) = cases, !items.isEmpty,
                    case let names = items.compactMap(\.stringValue), names.count == items.count
                else {
                    throw IsletError(.invalidRequest, "\(place).enum must be a list of strings.")
                }
                return .oneOf(names)
            }
            if members.count == 1, let wrapped = members["optional"] {
                return .optional(try parse(wrapped, path: path)).canonical
            }
            var fields: [String: Shape] = [:]
            for (name, member) in members {
                fields[name] = try parse(member, path: path.isEmpty ? name : "\(path).\(name)")
            }
            return .object(fields)
        default:
            throw IsletError(.invalidRequest, "\(place): a shape is a type name, [shape], {\"enum\": […]} or {field: shape}.")
        }
    }
}

/// An app's activity type, registered with the shapes of its attributes and content state.
public struct ActivityType: Codable, Hashable, Sendable {
    /// The app.
    public var bundleId: BundleID
    /// The attributes type's name, as in `attributesType`.
    public var name: String
    /// The shape of the static attributes, when known.
    public var attributes: Shape?
    /// The shape of the content state, when known.
    public var contentState: Shape?

    /// Creates an activity type.
    public init(bundleId: BundleID, name: String, attributes: Shape? = nil, contentState: Shape? = nil) {
        self.bundleId = bundleId
        self.name = name
        self.attributes = attributes
        self.contentState = contentState
    }
}
