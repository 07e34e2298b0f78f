import Foundation

/// The JSON paths of key paths into a `Decodable` type, learned by decoding probe instances.
///
/// Key paths carry no names on Linux, so the names come from the type's own `Decodable`
/// conformance: a recording decoder gives every field a value unique to its path (a marked
/// string, a distinct number or date), the key path is read on that instance, and its value says
/// which path it is. `CodingKeys` renames and nested types are followed for free.
///
/// Values with few possibilities — a `Bool`, an enum — cannot be unique, so they are *discrete*:
/// the first probe gives each its first possibility, and one more probe per discrete field gives
/// that field its second; the probe where a key path's value changed names it. An enum's
/// possibilities are its cases when it is `CaseIterable`, or the cases a layout compares it with
/// (`context.state.status == .failed` records `.failed`; see `ProbeSamples`), so reference 002's
/// `Status`, an enum without raw values, binds as it is. A type the probe cannot build makes the
/// whole type unnameable.
struct KeyPathNames<Root: Decodable> {
    private var probes: [(instance: Root, recording: Recording)] = []

    /// Probes `Root`; fails with the decoding error when a field cannot be made up.
    init() throws {
        let first = Recording(round: -1)
        probes.append((try Root(from: ProbeDecoder(recording: first, path: [])), first))
        for round in first.discrete.indices {
            let recording = Recording(round: round)
            probes.append((try Root(from: ProbeDecoder(recording: recording, path: [])), recording))
        }
    }

    /// The path of `keyPath`'s value (`speed`, `rider.name`, `rider`, `laps[0].time`, `status`),
    /// or `nil` when its value is not one the probe can tell apart (an object with no leaf, one
    /// of two enum fields of a type with a single known case).
    func path(of keyPath: PartialKeyPath<Root>) -> String? {
        guard let (instance, recording) = probes.first else { return nil }
        let value = instance[keyPath: keyPath]
        if let path = recording.path(of: value) ?? Self.objectPath(of: value, recording: recording) { return path }
        return discretePath(of: keyPath, value: value, recording: recording)
    }

    /// A discrete field's path: the probe that changed it names it; when none did (its type has
    /// one known possibility), it is the only field of its type, or unnameable.
    private func discretePath(of keyPath: PartialKeyPath<Root>, value: Any, recording: Recording) -> String? {
        let first = String(describing: value)
        for (round, probe) in probes.dropFirst().enumerated() where String(describing: probe.instance[keyPath: keyPath]) != first {
            return recording.discrete[round].path
        }
        let type = ObjectIdentifier(Swift.type(of: Self.unwrapped(value)))
        let candidates = recording.discrete.filter { $0.type == type }
        return candidates.count == 1 ? candidates[0].path : nil
    }

    private static func unwrapped(_ value: Any) -> Any {
        let mirror = Mirror(reflecting: value)
        guard mirror.displayStyle == .optional, let wrapped = mirror.children.first?.value else { return value }
        return wrapped
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
    /// Which discrete field this probe gives its second possibility; -1 for none.
    let round: Int
    /// The discrete fields in decoding order, with their types.
    private(set) var discrete: [(path: String, type: ObjectIdentifier)] = []
    private var paths: [String: String] = [:]
    private var next = 0

    init(round: Int) {
        self.round = round
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

    /// Which of a discrete field's `possibilities` this probe gives it: the second in its round.
    func choice<T>(for path: String, among possibilities: [T]) -> T {
        defer { discrete.append((path, ObjectIdentifier(T.self))) }
        return discrete.count == round && possibilities.count > 1 ? possibilities[1] : possibilities[0]
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
        case is Bool.Type: return recording.choice(for: name, among: [false, true]) as! T
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
            // An enum: its cases, or the ones layouts named.
            var possibilities = (T.self as? any CaseIterable.Type).map { Array(cases(of: $0).prefix(2)).compactMap { $0 as? T } } ?? []
            if possibilities.count < 2 {
                possibilities += ProbeSamples.samples(of: T.self).filter { sample in
                    !possibilities.contains { String(describing: $0) == String(describing: sample) }
                }
            }
            guard !possibilities.isEmpty else { throw error }
            return recording.choice(for: name, among: possibilities)
        }
    }

    private static func cases<C: CaseIterable>(of type: C.Type) -> [Any] { type.allCases.map { $0 } }

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

/// Values of types the probe cannot make up — enums without raw values that are not
/// `CaseIterable` — as layouts name them: comparing a binding with a case records the case.
enum ProbeSamples {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var samples: [ObjectIdentifier: [Data]] = [:]

    /// Remembers `value` as a possible value of its type; names learned before are learned again.
    static func record<T: Encodable>(_ value: T) {
        guard let data = try? JSONEncoder().encode(value) else { return }
        let added = lock.withLock {
            guard samples[ObjectIdentifier(T.self), default: []].contains(data) == false else { return false }
            samples[ObjectIdentifier(T.self), default: []].append(data)
            return true
        }
        if added { KeyPathNameCache.forget() }
    }

    static func samples<T: Decodable>(of type: T.Type) -> [T] {
        lock.withLock { samples[ObjectIdentifier(T.self)] ?? [] }.compactMap { try? JSONDecoder().decode(T.self, from: $0) }
    }
}
