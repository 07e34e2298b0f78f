import Foundation

/// Decodes a request body's `Decodable` type from its parsed `JSONValue`, and notes which keys
/// each object's containers asked for: a key the type never asked for is an unknown field,
/// refused with the keys it does take. One decode, one rule, and no list of field names kept
/// beside the type's own `CodingKeys`.
///
/// Dates are Unix seconds within `WireFormat.dateRange`. A `JSONValue` field (attributes, a
/// content state) is taken whole, its inside unchecked. Failures are `DecodingError`s with
/// the same coding paths Foundation's decoder gives, so `IsletError(decoding:)` names the field.
struct StrictDecoding {
    /// Decodes `type` from `value`, then refuses any key no container asked for.
    static func decode<T: Decodable>(_ type: T.Type, from value: JSONValue) throws -> T {
        let reads = Reads()
        let decoded = try StrictDecoder(value: value, codingPath: [], reads: reads).decode(type)
        try reads.checkUnknownKeys()
        return decoded
    }
}

/// The objects a decode opened: the keys each holds and the keys its containers asked for.
private final class Reads {
    /// One object of the body, however many containers read it.
    final class Object {
        let codingPath: [any CodingKey]
        let present: [String: JSONValue]
        var asked: Set<String> = []
        var opened = false

        init(codingPath: [any CodingKey], present: [String: JSONValue]) {
            self.codingPath = codingPath
            self.present = present
        }
    }

    private var objects: [Object] = []

    func opened(_ object: Object) {
        guard !object.opened else { return }
        object.opened = true
        objects.append(object)
    }

    /// Throws `invalidRequest` for the first unknown key, outermost object first.
    func checkUnknownKeys() throws(IsletError) {
        let unknown = objects.compactMap { object -> (object: Object, key: String)? in
            guard !object.asked.isSuperset(of: object.present.keys) else { return nil }
            return object.present.keys.filter { !object.asked.contains($0) }.sorted().first.map { (object, $0) }
        }
        guard let first = unknown.min(by: { ($0.object.codingPath.count, WireFormat.path($0.object.codingPath)) < ($1.object.codingPath.count, WireFormat.path($1.object.codingPath)) }) else {
            return
        }
        let path = WireFormat.path(first.object.codingPath)
        let place = path.isEmpty ? "in the body" : "in \(path)"
        throw IsletError(
            .invalidRequest,
            "Unknown field \"\(first.key)\" \(place); expected one of: \(first.object.asked.sorted().joined(separator: ", "))."
        )
    }
}

private struct StrictDecoder: Decoder {
    let value: JSONValue
    let codingPath: [any CodingKey]
    let reads: Reads
    /// The value's record when it is an object: every container of this decoder shares it.
    private let object: Reads.Object?
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(value: JSONValue, codingPath: [any CodingKey], reads: Reads) {
        self.value = value
        self.codingPath = codingPath
        self.reads = reads
        if case .object(let members) = value {
            object = Reads.Object(codingPath: codingPath, present: members)
        } else {
            object = nil
        }
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard let object else { throw mismatch([String: JSONValue].self, value, codingPath) }
        reads.opened(object)
        return KeyedDecodingContainer(KeyedContainer(object: object, codingPath: codingPath, reads: reads))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let elements) = value else { throw mismatch([JSONValue].self, value, codingPath) }
        return UnkeyedContainer(elements: elements, codingPath: codingPath, reads: reads)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleValueContainer(value: value, codingPath: codingPath, reads: reads)
    }

    /// `type` from this decoder's value: scalars and dates read directly, a `JSONValue` taken
    /// whole, anything else through its own `init(from:)`.
    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        if let value = try Scalars.decode(type, from: value, at: codingPath) { return value }
        return try T(from: self)
    }
}

/// Reading scalars, dates and whole JSON values out of a `JSONValue`, with Foundation's errors.
private enum Scalars {
    static func decode<T>(_ type: T.Type, from value: JSONValue, at path: [any CodingKey]) throws -> T? {
        switch type {
        case is JSONValue.Type: return value as? T
        case is String.Type:
            guard case .string(let text) = value else { throw failure(type, value, path) }
            return text as? T
        case is Bool.Type:
            guard case .bool(let flag) = value else { throw failure(type, value, path) }
            return flag as? T
        case is Double.Type: return try number(value, path, as: type) as? T
        case is Float.Type: return try Float(number(value, path, as: type)) as? T
        case is Date.Type:
            let seconds = try number(value, path, as: type)
            guard WireFormat.isAcceptedDate(seconds) else {
                throw DecodingError.dataCorrupted(.init(
                    codingPath: path, debugDescription: "\(seconds) is not a date Islet accepts; send \(WireFormat.dateRangeText)."
                ))
            }
            return Date(timeIntervalSince1970: seconds) as? T
        default:
            guard let integerType = type as? any FixedWidthInteger.Type else { return nil }
            // In range, or refused: never handed on to a type's own init, which would ask again.
            guard let converted = integerType.init(exactly: try integer(value, path, as: type)) else {
                throw failure(type, value, path)
            }
            return converted as? T
        }
    }

    private static func number(_ value: JSONValue, _ path: [any CodingKey], as type: Any.Type) throws -> Double {
        switch value {
        case .integer(let whole): return Double(whole)
        case .number(let number): return number
        default: throw failure(type, value, path)
        }
    }

    private static func integer(_ value: JSONValue, _ path: [any CodingKey], as type: Any.Type) throws -> Int64 {
        switch value {
        case .integer(let whole): return whole
        case .number(let number):
            guard let whole = Int64(exactly: number) else { throw failure(type, value, path) }
            return whole
        default: throw failure(type, value, path)
        }
    }

    /// `valueNotFound` for a null where a value must be, `typeMismatch` otherwise: as Foundation.
    static func failure(_ type: Any.Type, _ value: JSONValue, _ path: [any CodingKey]) -> DecodingError {
        mismatch(type, value, path)
    }
}

private func mismatch(_ type: Any.Type, _ value: JSONValue, _ path: [any CodingKey]) -> DecodingError {
    if value == .null {
        return .valueNotFound(type, .init(codingPath: path, debugDescription: "Expected \(type) but found null instead."))
    }
    return .typeMismatch(type, .init(codingPath: path, debugDescription: "Expected \(type) but found \(value.typeName) instead."))
}

private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let object: Reads.Object
    let codingPath: [any CodingKey]
    let reads: Reads
    private var members: [String: JSONValue] { object.present }

    init(object: Reads.Object, codingPath: [any CodingKey], reads: Reads) {
        self.object = object
        self.codingPath = codingPath
        self.reads = reads
    }

    var allKeys: [Key] { members.keys.compactMap(Key.init(stringValue:)) }

    func contains(_ key: Key) -> Bool {
        object.asked.insert(key.stringValue)
        return members[key.stringValue] != nil
    }

    private func member(_ key: Key) throws -> JSONValue {
        object.asked.insert(key.stringValue)
        guard let value = members[key.stringValue] else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "No value for \(key.stringValue)."))
        }
        return value
    }

    private func decoder(for key: Key) throws -> StrictDecoder {
        StrictDecoder(value: try member(key), codingPath: codingPath + [key], reads: reads)
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        try member(key) == .null
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try decoder(for: key).decode(type)
    }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        object.asked.insert(key.stringValue)
        guard let value = members[key.stringValue], value != .null else { return nil }
        return try StrictDecoder(value: value, codingPath: codingPath + [key], reads: reads).decode(type)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try decoder(for: key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try decoder(for: key).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        StrictDecoder(value: .object(members), codingPath: codingPath, reads: reads)
    }


    func superDecoder(forKey key: Key) throws -> any Decoder {
        try decoder(for: key)
    }
}

private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let elements: [JSONValue]
    let codingPath: [any CodingKey]
    let reads: Reads
    private(set) var currentIndex = 0

    init(elements: [JSONValue], codingPath: [any CodingKey], reads: Reads) {
        self.elements = elements
        self.codingPath = codingPath
        self.reads = reads
    }

    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    private struct Index: CodingKey {
        var intValue: Int?
        var stringValue: String { "\(intValue!)" }
        init(_ index: Int) { intValue = index }
        init?(stringValue: String) { nil }
        init?(intValue: Int) { self.intValue = intValue }
    }

    private mutating func next(_ type: Any.Type) throws -> StrictDecoder {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(type, .init(codingPath: codingPath + [Index(currentIndex)], debugDescription: "Unkeyed container is at end."))
        }
        defer { currentIndex += 1 }
        return StrictDecoder(value: elements[currentIndex], codingPath: codingPath + [Index(currentIndex)], reads: reads)
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, elements[currentIndex] == .null else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try next(type).decode(type)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try next(type).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try next([JSONValue].self).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder {
        try next(JSONValue.self)
    }
}

private struct SingleValueContainer: SingleValueDecodingContainer {
    let value: JSONValue
    let codingPath: [any CodingKey]
    let reads: Reads

    func decodeNil() -> Bool { value == .null }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try StrictDecoder(value: value, codingPath: codingPath, reads: reads).decode(type)
    }
}
