import GRDB

/// Which of SQLite's errors are the storage's own (for `WriteHealth`).
enum SQLiteFailure {
    /// What went wrong, when `error` says the storage itself cannot take writes.
    static func storageFailure(_ error: any Error) -> String? {
        guard let error = error as? DatabaseError else { return nil }
        switch error.resultCode.primaryResultCode {
        case .SQLITE_FULL: return "the disk is full (SQLite: \(error.message ?? "database or disk is full"))"
        // ABORT: SQLite rolled the transaction back after one of these.
        case .SQLITE_IOERR, .SQLITE_CANTOPEN, .SQLITE_READONLY, .SQLITE_CORRUPT, .SQLITE_NOTADB, .SQLITE_NOMEM,
             .SQLITE_PROTOCOL, .SQLITE_BUSY, .SQLITE_LOCKED, .SQLITE_ABORT:
            return "SQLite: \(error.message ?? "\(error.resultCode)")"
        default:
            return nil
        }
    }
}
