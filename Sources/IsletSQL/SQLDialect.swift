/// Where the SQL of the two databases must differ, said once. Everything else — the
/// statements, `ON CONFLICT … DO UPDATE`, row values, `CASE`, `substr` — both take as written.
public enum SQLDialect: Sendable {
    case sqlite
    case postgresql

    /// A text column compared byte by byte, as ids sort everywhere (and as "~" after every
    /// character of an id assumes): SQLite compares text so by default, PostgreSQL by its
    /// collation unless told.
    public func bytewise(_ column: String) -> String {
        switch self {
        case .sqlite: column
        case .postgresql: "\(column) COLLATE \"C\""
        }
    }

    /// A top-level string of a JSON text column, or `NULL`.
    public func jsonText(_ column: String, key: String) -> String {
        switch self {
        case .sqlite: "json_extract(\(column), '$.\(key)')"
        case .postgresql: "(\(column)::jsonb ->> '\(key)')"
        }
    }

    /// A statement as SQLite takes it: each placeholder `$n` written `?n` (the numbers kept,
    /// so a value used twice is bound once). Quoted text is left as it is.
    public static func sqlitePlaceholders(_ sql: String) -> String {
        var bytes = Array(sql.utf8)
        var quoted = false
        for index in bytes.indices {
            switch bytes[index] {
            case UInt8(ascii: "'"):
                quoted.toggle()
            case UInt8(ascii: "$") where !quoted && index + 1 < bytes.count && (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index + 1]):
                bytes[index] = UInt8(ascii: "?")
            default:
                break
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
