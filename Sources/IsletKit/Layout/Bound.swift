import Foundation
import IsletCore

/// A value of an activity's attributes or content state, as a layout binds it: `context.state.speed`.
///
/// Reading a member gives a `Bound` for it, checked by the compiler (a misspelled field does not
/// compile); the path it stands for (`state.speed`) is learned from the type's `Decodable`
/// conformance (`KeyPathNames`).
@dynamicMemberLookup
public struct Bound<Root: Decodable & SendableMetatype, Value: SendableMetatype>: @unchecked Sendable {
    /// The path of `Root` itself: `state`, or the path of an optional this one chains through.
    let scope: @Sendable () throws -> String
    let keyPath: KeyPath<Root, Value>
    /// Whether it is read through a Swift optional (`climb.name` for `climb: Climb?`).
    let throughOptional: Bool

    init(scope: String, keyPath: KeyPath<Root, Value>) {
        self.scope = { scope }
        self.keyPath = keyPath
        self.throughOptional = false
    }

    init(scope: @escaping @Sendable () throws -> String, keyPath: KeyPath<Root, Value>, throughOptional: Bool) {
        self.scope = scope
        self.keyPath = keyPath
        self.throughOptional = throughOptional
    }

    public subscript<Member>(dynamicMember member: KeyPath<Value, Member>) -> Bound<Root, Member> {
        Bound<Root, Member>(scope: scope, keyPath: keyPath.appending(path: member), throughOptional: throughOptional)
    }

    /// A member of an optional value (`context.state.climb.name` for `climb: Climb?`): the
    /// renderer shows a binding's default when the optional is missing.
    public subscript<Wrapped: Decodable, Member>(dynamicMember member: KeyPath<Wrapped, Member>) -> Bound<Wrapped, Member>
    where Value == Wrapped? {
        let parent = self
        return Bound<Wrapped, Member>(scope: { try parent.path() }, keyPath: member, throughOptional: true)
    }

    /// Whether a content state may leave the value out: a Swift optional, or read through one.
    /// `JSONEncoder` leaves a nil optional out, so its absence is a value, not a state that does
    /// not fit the layout (no warning; docs/layouts.md).
    var mayBeMissing: Bool { throughOptional || Value.self is any OptionalValue.Type }

    /// The binding path, such as `state.rider.name`.
    func path() throws -> String {
        let scope = try self.scope()
        if keyPath == \Root.self as PartialKeyPath<Root> { return scope }
        guard let path = try KeyPathNameCache.names(for: Root.self).path(of: keyPath) else {
            throw LayoutDSLError("\(scope): \(keyPath) is not a value a layout can bind (bind its fields, or a String, number, Bool or Date)")
        }
        return "\(scope).\(path)"
    }

    /// The binding; an optional's draws nothing while it is nil (a default of `""`).
    func binding(format: JSONValue? = nil, default fallback: String? = nil) throws -> JSONValue {
        var binding: [String: JSONValue] = ["bind": .string(try path())]
        if let format { binding["format"] = format }
        if let fallback = fallback ?? (mayBeMissing ? "" : nil) { binding["default"] = .string(fallback) }
        return .object(binding)
    }
}

/// Swift's `Optional`, whatever it wraps: how a `Bound` tells that its value may be nil.
protocol OptionalValue {}
extension Optional: OptionalValue {}

/// Why a layout could not be built.
public struct LayoutDSLError: Error, CustomStringConvertible, Sendable {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// Names are learned once per type.
enum KeyPathNameCache {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var cache: [ObjectIdentifier: Any] = [:]

    static func names<Root: Decodable>(for type: Root.Type) throws -> KeyPathNames<Root> {
        try lock.withLock {
            if let names = cache[ObjectIdentifier(type)] as? KeyPathNames<Root> { return names }
            do {
                let names = try KeyPathNames<Root>()
                cache[ObjectIdentifier(type)] = names
                return names
            } catch {
                throw LayoutDSLError(
                    "\(Root.self) cannot be probed for its field names (an enum without raw values needs "
                        + "to be CaseIterable, or compared with one of its cases in the layout): \(error)"
                )
            }
        }
    }

    /// Drops every learned name: a new enum case is known.
    static func forget() {
        lock.withLock { cache.removeAll() }
    }
}

/// What a layout's closures receive: the activity's attributes and content state to bind to.
public struct ActivityViewContext<Attributes: ActivityAttributes> {
    /// The static attributes.
    public var attributes: Bound<Attributes, Attributes> { Bound(scope: "attributes", keyPath: \.self) }
    /// The content state.
    public var state: Bound<Attributes.ContentState, Attributes.ContentState> { Bound(scope: "state", keyPath: \.self) }
    /// Whether the content is stale.
    public var isStale: Bound<Bool, Bool> { Bound(scope: "isStale", keyPath: \.self) }
}
