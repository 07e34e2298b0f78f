import Foundation
import IsletCore
import IsletSQL
import PostgresNIO

/// Activity rows written by the changes of a batch that held, sent together: the writer's
/// transactions are mostly updates, each writing one activity, and one statement for all of
/// them instead of one each halves a batch's round trips (`PostgresSession.flushActivities`).
struct ActivityWrites {
    private(set) var rows: [ActivityColumns] = []
    private var ids: Set<ActivityID> = []

    var isEmpty: Bool { rows.isEmpty }

    /// Whether a row of the activity is waiting.
    func holds(_ id: ActivityID) -> Bool { ids.contains(id) }

    mutating func append(_ row: ActivityColumns) {
        rows.append(row)
        ids.insert(row.id)
    }

    /// Takes the waiting rows.
    mutating func take() -> [ActivityColumns] {
        defer {
            rows = []
            ids = []
        }
        return rows
    }

    /// One row: the statement and its values.
    static func statement(_ row: ActivityColumns) -> (sql: String, values: [(any PostgresDynamicTypeEncodable)?]) {
        (ActivityColumns.upsert, PostgresSession.encodable(row.values))
    }

    /// Several rows of distinct activities in one statement, as arrays (a column that may be
    /// NULL travels with a flag, arrays of optionals being beyond postgres-nio's encoding).
    static func statement(_ rows: [ActivityColumns]) -> (sql: String, values: [(any PostgresDynamicTypeEncodable)?]) {
        (
            """
            INSERT INTO activity (\(ActivityColumns.columns))
            SELECT id, bundleId, deviceId, attributesType, state, CASE WHEN hasKey THEN key END, CASE WHEN hasDeadline THEN deadline END,
                relevanceScore, startTime, createdAt, updatedAt, body, CASE WHEN hasChannel THEN channelId END
            FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bool[], $8::float8[], $9::bool[],
                $10::float8[], $11::float8[], $12::float8[], $13::float8[], $14::text[], $15::text[], $16::bool[])
                AS r(id, bundleId, deviceId, attributesType, state, key, hasKey, deadline, hasDeadline, relevanceScore, startTime,
                    createdAt, updatedAt, body, channelId, hasChannel)
            \(ActivityColumns.onConflict)
            """,
            [
                rows.map(\.id), rows.map(\.bundleId), rows.map(\.deviceId), rows.map(\.attributesType), rows.map(\.state),
                rows.map { $0.key ?? "" }, rows.map { $0.key != nil }, rows.map { $0.deadline ?? 0 }, rows.map { $0.deadline != nil },
                rows.map(\.relevanceScore), rows.map(\.startTime), rows.map(\.createdAt), rows.map(\.updatedAt), rows.map(\.body),
                rows.map { $0.channelId ?? "" }, rows.map { $0.channelId != nil },
            ]
        )
    }
}
