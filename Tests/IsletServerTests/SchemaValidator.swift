import Foundation
import IsletCore

/// Checks JSON values against a JSON Schema (2020-12), for the keywords the OpenAPI document
/// uses. A keyword it does not know is reported as a problem, so a schema it cannot read never
/// passes unchecked.
struct SchemaValidator {
    /// The document `$ref`s point into.
    let root: JSONValue

    /// Keywords that only annotate.
    private static let annotations: Set<String> = ["description", "format", "examples", "title", "default", "summary"]

    /// Where `value` does not fit `schema`, as `path: problem` lines; empty when it fits.
    func problems(_ value: JSONValue, _ schema: JSONValue, at path: String = "$") -> [String] {
        if case .bool(let accepts) = schema {
            return accepts ? [] : ["\(path): no value is allowed here"]
        }
        guard let keywords = schema.objectValue else { return ["\(path): the schema is not an object"] }
        var found: [String] = []
        for (keyword, argument) in keywords.sorted(by: { $0.key < $1.key }) {
            found += check(keyword, argument, value, in: keywords, at: path)
        }
        return found
    }

    /// The value a `#/…` reference points to.
    func resolve(_ reference: String) -> JSONValue? {
        guard reference.hasPrefix("#/") else { return nil }
        var node: JSONValue? = root
        for part in reference.dropFirst(2).split(separator: "/") {
            node = node?[part.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")]
        }
        return node
    }

    private func check(
        _ keyword: String, _ argument: JSONValue, _ value: JSONValue, in schema: [String: JSONValue], at path: String
    ) -> [String] {
        switch keyword {
        case "$ref":
            guard let reference = argument.stringValue, let target = resolve(reference) else {
                return ["\(path): cannot resolve \(argument)"]
            }
            return problems(value, target, at: path)
        case "type":
            let names: [String] =
                if case .array(let items) = argument { items.compactMap(\.stringValue) } else { [argument.stringValue ?? ""] }
            return names.contains(where: { Self.has(value, type: $0) })
                ? [] : ["\(path): expected \(names.joined(separator: " or ")), got \(value.typeName) \(Self.short(value))"]
        case "enum":
            guard case .array(let cases) = argument else { return ["\(path): enum is not an array"] }
            return cases.contains(where: { Self.same($0, value) }) ? [] : ["\(path): \(Self.short(value)) is not one of \(Self.short(argument))"]
        case "const":
            return Self.same(argument, value) ? [] : ["\(path): expected \(Self.short(argument)), got \(Self.short(value))"]
        case "properties":
            guard let members = value.objectValue, let properties = argument.objectValue else { return [] }
            return properties.sorted(by: { $0.key < $1.key }).flatMap { name, subschema in
                members[name].map { problems($0, subschema, at: "\(path).\(name)") } ?? []
            }
        case "required":
            guard let members = value.objectValue, case .array(let names) = argument else { return [] }
            return names.compactMap(\.stringValue).filter { members[$0] == nil }.map { "\(path): missing \($0)" }
        case "additionalProperties":
            guard let members = value.objectValue else { return [] }
            let known = Set(schema["properties"]?.objectValue?.keys.map { $0 } ?? [])
            return members.keys.sorted().filter { !known.contains($0) }.flatMap { name in
                problems(members[name]!, argument, at: "\(path).\(name)")
            }
        case "minProperties", "maxProperties":
            guard let members = value.objectValue, let bound = Self.number(argument) else { return [] }
            let fits = keyword == "minProperties" ? Double(members.count) >= bound : Double(members.count) <= bound
            return fits ? [] : ["\(path): \(members.count) members breaks \(keyword) \(bound)"]
        case "items":
            guard case .array(let items) = value else { return [] }
            return items.enumerated().flatMap { index, item in problems(item, argument, at: "\(path)[\(index)]") }
        case "minItems", "maxItems":
            guard case .array(let items) = value, let bound = Self.number(argument) else { return [] }
            let fits = keyword == "minItems" ? Double(items.count) >= bound : Double(items.count) <= bound
            return fits ? [] : ["\(path): \(items.count) items breaks \(keyword) \(bound)"]
        case "minLength", "maxLength":
            guard let text = value.stringValue, let bound = Self.number(argument) else { return [] }
            let length = Double(text.unicodeScalars.count)
            let fits = keyword == "minLength" ? length >= bound : length <= bound
            return fits ? [] : ["\(path): length \(Int(length)) breaks \(keyword) \(bound)"]
        case "pattern":
            guard let text = value.stringValue, let pattern = argument.stringValue else { return [] }
            guard let regex = try? NSRegularExpression(pattern: pattern) else { return ["\(path): bad pattern \(pattern)"] }
            let range = NSRange(text.startIndex..., in: text)
            return regex.firstMatch(in: text, range: range) != nil ? [] : ["\(path): \(Self.short(value)) does not match \(pattern)"]
        case "minimum", "maximum":
            guard let number = Self.number(value), let bound = Self.number(argument) else { return [] }
            let fits = keyword == "minimum" ? number >= bound : number <= bound
            return fits ? [] : ["\(path): \(number) breaks \(keyword) \(bound)"]
        case "allOf":
            guard case .array(let all) = argument else { return ["\(path): allOf is not an array"] }
            return all.flatMap { problems(value, $0, at: path) }
        case "anyOf":
            guard case .array(let any) = argument else { return ["\(path): anyOf is not an array"] }
            let each = any.map { problems(value, $0, at: path) }
            return each.contains(where: \.isEmpty) ? [] : ["\(path): fits none of anyOf (\(Self.firsts(each)))"]
        case "oneOf":
            guard case .array(let one) = argument else { return ["\(path): oneOf is not an array"] }
            let each = one.map { problems(value, $0, at: path) }
            let fitting = each.filter(\.isEmpty).count
            return fitting == 1 ? [] : ["\(path): fits \(fitting) of oneOf, not one (\(Self.firsts(each)))"]
        case "not":
            return problems(value, argument, at: path).isEmpty ? ["\(path): fits a schema under not"] : []
        case "if":
            let branch = problems(value, argument, at: path).isEmpty ? schema["then"] : schema["else"]
            return branch.map { problems(value, $0, at: path) } ?? []
        case "then", "else":
            return []  // read with "if"
        default:
            return Self.annotations.contains(keyword) ? [] : ["\(path): the validator does not know the keyword \(keyword)"]
        }
    }

    /// The first problem with each alternative, for a message that stays short.
    private static func firsts(_ problems: [[String]]) -> String {
        problems.compactMap(\.first).joined(separator: "; ")
    }

    private static func has(_ value: JSONValue, type: String) -> Bool {
        switch (type, value) {
        case ("null", .null), ("boolean", .bool), ("string", .string), ("array", .array), ("object", .object): true
        case ("number", .integer), ("number", .number), ("integer", .integer): true
        case ("integer", .number(let number)): number.rounded() == number
        default: false
        }
    }

    private static func number(_ value: JSONValue) -> Double? {
        switch value {
        case .integer(let integer): Double(integer)
        case .number(let number): number
        default: nil
        }
    }

    private static func same(_ lhs: JSONValue, _ rhs: JSONValue) -> Bool {
        if let left = number(lhs), let right = number(rhs) { return left == right }
        return lhs == rhs
    }

    private static func short(_ value: JSONValue) -> String {
        let text = (try? WireFormat.string(value)) ?? "?"
        return text.count > 80 ? text.prefix(77) + "…" : text
    }
}
