import Foundation

/// The JSON paths of key paths into a `Decodable` type, learned by decoding probe instances.
///
/// Key paths carry no names on Linux, so the names come from the type's own `Decodable`
/// conformance: a recording decoder gives every field a value unique to its path (a marked
/// string, a distinct number or date), the key path is read on that instance, and its value says
/// which path it is. `CodingKeys` renames and nested types are followed for free. Booleans take
/// one probe each (a probe sets one of them). An enum decodes as its first case when it is
/// `CaseIterable`; a type the probe cannot build makes the whole type unnameable.
struct KeyPathNames<Root: Decodable> {
    private var probes: [(instance: Root, recording: Recording)] = []

    /// Probes `Root`; fails with the decoding error when a field cannot be made up.
    init() throws {
        let first = Recording(booleanRound: -1)
        let instance = try Root(from: ProbeDecoder(recording: first, path: []))
        probes.append((instance, first))
        for round in 0..<first.booleanCount {
            let recording = Recording(booleanRound: round)
            probes.append((try Root(from: ProbeDecoder(recording: recording, path: [])), recording))
        }
    }

    /// The path of `keyPath`'s value (`speed`, `rider.name`, `rider`, `laps[0].time`), or `nil`
    /// when its value is not one the probe can tell apart (an enum, an object with no leaf).
    func path(of keyPath: PartialKeyPath<Root>) -> String? {
        guard let (instance, recording) = probes.first else { return nil }
        let value = instance[keyPath: keyPath]
        if value is Bool {
            // The probe whose round set it to true names it.
            for (instance, recording) in probes.dropFirst() where instance[keyPath: keyPath] as? Bool == true {
                return recording.booleanPath
            }
            return nil
        }
        return recording.path(of: value) ?? Self.objectPath(of: value, recording: recording)
    }

    /// The path of an object: a leaf inside it has the object's path plus its own key.
    private static func objectPath(of value: Any, recording: Recording) -> String? {
        var mirror = Mirror(reflecting: value)
        if mirror.displayStyle == .optional {
            guard let wrapped = mirror.children.first?.value else { return nil }
            mirror = Mirror(reflecting: wrapped)
        }
        guard mirror.displayStyle == .struct || mirror.displayStyle == .class else { return nil }
        for child in mirror.children {
            if let inner = recording.path(of: child.value) ?? objectPath(of: child.value, recording: recording) {
                return parent(of: inner)
            }
        }
        return nil
    }

    /// `a.b[0].c` → `a.b[0]`; `a.b[0]` → `a.b`.
    private static func parent(of path: String) -> String? {
        if path.hasSuffix("]"), let open = path.lastIndex(of: "[") { return String(path[..<open]) }
        guard let dot = path.lastIndex(of: ".") else { return nil }
        return String(path[..<dot])
    }
}

/// What a probe decoding handed out, by value.
final class Recording: @unchecked Sendable {
    let booleanRound: Int
    private(set) var booleanCount = 0
    private(set) var booleanPath: String?
    private var paths: [String: String] = [:]
    private var next = 0

    init(booleanRound: Int) {
        self.booleanRound = booleanRound
    }

    /// A number unique in this probe, remembered as `path`'s.
    func number(for path: String) -> Int {
        next += 1
        let number = 1_000_003 + next * 7
        paths["n\(number)"] = path
        return number
    }

    func string(for path: String) -> String {
        let string = "\u{E000}\(path)"
        paths["s\(string)"] = path
        return string
    }

    func bool(for path: String) -> Bool {
        defer { booleanCount += 1 }
        if booleanCount == booleanRound {
            booleanPath = path
            return true
        }
        return false
    }

    func path(of value: Any) -> String? {
        switch value {
        case let string as String: return paths["s\(string)"]
        case let date as Date: return paths["n\(Int(date.timeIntervalSinceReferenceDate))"]
        case let url as URL: return paths["s\(url.absoluteString.removingPercentEncoding ?? "")"]
        case let number as any BinaryInteger: return paths["n\(Int(number))"]
        case let number as any BinaryFloatingPoint: return paths["n\(Int(Double(number)))"]
        default:
            // An optional's value, if it has one (every value casts to `Any?`, so ask Mirror).
            let mirror = Mirror(reflecting: value)
            guard mirror.displayStyle == .optional, let wrapped = mirror.children.first?.value else { return nil }
            return path(of: wrapped)
        }
    }
}

private struct ProbeDecoder: Decoder {
    let recording: Recording
    let path: [String]
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(ProbeKeyed<Key>(recording: recording, path: path))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        ProbeUnkeyed(recording: recording, path: path)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        ProbeSingle(recording: recording, path: path)
    }

    /// A value for `type` at `path`: made up for leaves, decoded by probe for the rest.
    static func value<T: Decodable>(_ type: T.Type, recording: Recording, path: [String]) throws -> T {
        let name = Self.name(path)
        switch type {
        case is String.Type: return recording.string(for: name) as! T
        case is Bool.Type: return recording.bool(for: name) as! T
        case is Date.Type: return Date(timeIntervalSinceReferenceDate: Double(recording.number(for: name))) as! T
        case is URL.Type: return URL(string: "islet-probe:/" + (recording.string(for: name).addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""))! as! T
        case is Double.Type: return Double(recording.number(for: name)) as! T
        case is Float.Type: return Float(recording.number(for: name)) as! T
        case is Int.Type: return recording.number(for: name) as! T
        case is Int64.Type: return Int64(recording.number(for: name)) as! T
        case is Int32.Type: return Int32(recording.number(for: name)) as! T
        case is UInt.Type: return UInt(recording.number(for: name)) as! T
        case is UInt64.Type: return UInt64(recording.number(for: name)) as! T
        case is UInt32.Type: return UInt32(recording.number(for: name)) as! T
        default: break
        }
        do {
            return try T(from: ProbeDecoder(recording: recording, path: path))
        } catch {
            if let iterable = T.self as? any CaseIterable.Type, let first = firstCase(of: iterable) as? T {
                return first
            }
            throw error
        }
    }

    private static func firstCase<C: CaseIterable>(of type: C.Type) -> Any? { type.allCases.first }

    static func name(_ path: [String]) -> String {
        path.reduce("") { name, step in
            step.hasPrefix("[") ? name + step : (name.isEmpty ? step : name + "." + step)
        }
    }
}

private struct ProbeKeyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let recording: Recording
    let path: [String]
    var codingPath: [any CodingKey] { [] }
    var allKeys: [Key] { [] }

    func contains(_ key: Key) -> Bool { true }
    func decodeNil(forKey key: Key) throws -> Bool { false }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try ProbeDecoder.value(type, recording: recording, path: path + [key.stringValue])
    }
    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        KeyedDecodingContainer(ProbeKeyed<NestedKey>(recording: recording, path: path + [key.stringValue]))
    }
    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        ProbeUnkeyed(recording: recording, path: path + [key.stringValue])
    }
    func superDecoder() throws -> any Decoder { ProbeDecoder(recording: recording, path: path) }
    func superDecoder(forKey key: Key) throws -> any Decoder { ProbeDecoder(recording: recording, path: path + [key.stringValue]) }
}

/// An array of one element: `laps[0]`.
private struct ProbeUnkeyed: UnkeyedDecodingContainer {
    let recording: Recording
    let path: [String]
    var codingPath: [any CodingKey] { [] }
    var count: Int? { 1 }
    var isAtEnd: Bool { currentIndex > 0 }
    var currentIndex = 0

    init(recording: Recording, path: [String]) {
        self.recording = recording
        self.path = path
    }

    mutating func decodeNil() throws -> Bool { false }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        defer { currentIndex += 1 }
        return try ProbeDecoder.value(type, recording: recording, path: path + ["[\(currentIndex)]"])
    }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        defer { currentIndex += 1 }
        return KeyedDecodingContainer(ProbeKeyed<NestedKey>(recording: recording, path: path + ["[\(currentIndex)]"]))
    }
    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        defer { currentIndex += 1 }
        return ProbeUnkeyed(recording: recording, path: path + ["[\(currentIndex)]"])
    }
    mutating func superDecoder() throws -> any Decoder { ProbeDecoder(recording: recording, path: path) }
}

private struct ProbeSingle: SingleValueDecodingContainer {
    let recording: Recording
    let path: [String]
    var codingPath: [any CodingKey] { [] }

    func decodeNil() -> Bool { false }
    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try ProbeDecoder.value(type, recording: recording, path: path)
    }
}
