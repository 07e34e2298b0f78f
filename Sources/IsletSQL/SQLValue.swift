import Foundation

/// A value bound to a statement's placeholder, as every driver can bind it.
public enum SQLValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case boolean(Bool)
}

/// What a statement's values may be: the store's columns hold text, integers, reals and
/// booleans, and a missing value (`nil`) is `NULL`.
public protocol SQLBindable {
    var sqlValue: SQLValue { get }
}

extension String: SQLBindable {
    public var sqlValue: SQLValue { .text(self) }
}

extension Int: SQLBindable {
    public var sqlValue: SQLValue { .integer(Int64(self)) }
}

extension Int64: SQLBindable {
    public var sqlValue: SQLValue { .integer(self) }
}

extension Double: SQLBindable {
    public var sqlValue: SQLValue { .real(self) }
}

extension Bool: SQLBindable {
    public var sqlValue: SQLValue { .boolean(self) }
}

extension SQLValue {
    /// A statement's value, `nil` being `NULL`.
    public init(_ value: (any SQLBindable)?) {
        self = value?.sqlValue ?? .null
    }
}

/// One row of a statement's answer, its columns read by name (as the SQL writes them:
/// `bundleId`) or by position.
public protocol SQLRow {
    /// Whether the column is `NULL`.
    func isNull(_ column: SQLColumnKey) throws -> Bool
    func string(_ column: SQLColumnKey) throws -> String
    func int64(_ column: SQLColumnKey) throws -> Int64
    func double(_ column: SQLColumnKey) throws -> Double
    func bool(_ column: SQLColumnKey) throws -> Bool
}

/// A column of a row: by name or by position.
public enum SQLColumnKey: Sendable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
    case name(String)
    case index(Int)

    public init(stringLiteral value: String) { self = .name(value) }
    public init(integerLiteral value: Int) { self = .index(value) }
}

extension SQLRow {
    /// A column's value as `T`; a `NULL` read as a type that cannot be `nil` is an error.
    public subscript<T: SQLColumn>(_ column: String, as type: T.Type = T.self) -> T {
        get throws { try T.read(.name(column), from: self) }
    }

    /// A time stored as seconds since 1970.
    public func date(_ column: String) throws -> Date {
        Date(timeIntervalSince1970: try double(.name(column)))
    }

    /// A time stored as seconds since 1970, or `NULL`.
    public func optionalDate(_ column: String) throws -> Date? {
        try isNull(.name(column)) ? nil : try date(column)
    }
}

/// A type a column is read as.
public protocol SQLColumn {
    static func read(_ column: SQLColumnKey, from row: any SQLRow) throws -> Self
}

extension String: SQLColumn {
    public static func read(_ column: SQLColumnKey, from row: any SQLRow) throws -> String { try row.string(column) }
}

extension Int: SQLColumn {
    public static func read(_ column: SQLColumnKey, from row: any SQLRow) throws -> Int { Int(try row.int64(column)) }
}

extension Int64: SQLColumn {
    public static func read(_ column: SQLColumnKey, from row: any SQLRow) throws -> Int64 { try row.int64(column) }
}

extension Double: SQLColumn {
    public static func read(_ column: SQLColumnKey, from row: any SQLRow) throws -> Double { try row.double(column) }
}

extension Bool: SQLColumn {
    public static func read(_ column: SQLColumnKey, from row: any SQLRow) throws -> Bool { try row.bool(column) }
}

extension Optional: SQLColumn where Wrapped: SQLColumn {
    public static func read(_ column: SQLColumnKey, from row: any SQLRow) throws -> Wrapped? {
        try row.isNull(column) ? nil : try Wrapped.read(column, from: row)
    }
}

/// A column read as a type that cannot be `NULL` was `NULL`, or is not there.
public struct SQLColumnError: Error, CustomStringConvertible {
    public let column: SQLColumnKey
    public let problem: String

    public init(_ column: SQLColumnKey, _ problem: String) {
        self.column = column
        self.problem = problem
    }

    public var description: String {
        switch column {
        case .name(let name): "column \(name): \(problem)"
        case .index(let index): "column \(index): \(problem)"
        }
    }
}
