import Foundation
import IsletCore
import IsletEngine

/// Kept `Idempotency-Key`s (docs/audiences.md, "Exactly once under retries").
extension SQLReading {
    /// A caller's key; in a write, locked (two requests with one key take turns).
    public func idempotencyRecord(scope: String, key: String) throws -> IdempotencyRecord? {
        try session.row("SELECT * FROM idempotencyKey WHERE scope = $1 AND key = $2\(try session.rowsLock())", [scope, key], SQLRows.idempotencyRecord)
    }
}

extension SQLWriting {
    public func putIdempotencyRecord(_ record: IdempotencyRecord) throws {
        try session.execute(
            """
            INSERT INTO idempotencyKey (scope, key, digest, holder, state, status, contentType, body, createdAt)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
            ON CONFLICT (scope, key) DO UPDATE SET digest = excluded.digest, holder = excluded.holder, state = excluded.state,
                status = excluded.status, contentType = excluded.contentType, body = excluded.body, createdAt = excluded.createdAt
            """,
            [
                record.scope, record.key, record.digest, record.holder, record.state.rawValue, record.status.map(Int64.init), record.contentType,
                record.body, record.createdAt.timeIntervalSince1970,
            ]
        )
    }


    /// Forgets up to `limit` keys made before `date`; returns how many.
    public func purgeIdempotencyRecords(before date: Date, limit: Int) throws -> Int {
        try session.count(
            "DELETE FROM idempotencyKey WHERE (scope, key) IN (SELECT scope, key FROM idempotencyKey WHERE createdAt < $1 ORDER BY createdAt LIMIT $2)",
            [date.timeIntervalSince1970, limit]
        )
    }
}

extension SQLRows {
    public static func idempotencyRecord(_ row: any SQLRow) throws -> IdempotencyRecord {
        IdempotencyRecord(
            scope: try row["scope"], key: try row["key"], digest: try row["digest"], holder: try row["holder"],
            state: IdempotencyRecord.State(rawValue: try row["state"]) ?? .applied, status: try row["status", as: Int64?.self].map(Int.init),
            contentType: try row["contentType"], body: try row["body"], createdAt: try row.date("createdAt")
        )
    }
}
