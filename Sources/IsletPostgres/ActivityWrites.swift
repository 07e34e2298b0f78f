import Foundation
import IsletCore
import PostgresNIO

/// Activity rows written by the changes of a batch that held, sent together: the writer's
/// transactions are mostly updates, each writing one activity, and one statement for all of
/// them instead of one each halves a batch's round trips (`PostgresSession.flushActivities`).
struct ActivityWrites {
    /// One activity as its row stores it.
    struct Row {
        var id: ActivityID
        var bundleId: BundleID
        var deviceId: DeviceID
        var attributesType: String
        var state: String
        var key: String?
        var deadline: Double?
        var relevanceScore: Double
        var startTime: Double
        var createdAt: Double
        var updatedAt: Double
        var body: String
        var channelId: String?
    }

    private(set) var rows: [Row] = []
    private var ids: Set<ActivityID> = []

    var isEmpty: Bool { rows.isEmpty }

    /// Whether a row of the activity is waiting.
    func holds(_ id: ActivityID) -> Bool { ids.contains(id) }

    mutating func append(_ row: Row) {
        rows.append(row)
        ids.insert(row.id)
    }

    /// Takes the waiting rows.
    mutating func take() -> [Row] {
        defer {
            rows = []
            ids = []
        }
        return rows
    }

    /// What is set when the row exists: everything the engine changes (a new content keeps every
    /// indexed value as it was, and PostgreSQL then updates the row in place without touching
    /// an index — a HOT update, where the page has room, migration 4).
    private static let upsert = """
        ON CONFLICT (id) DO UPDATE SET state = excluded.state, deadline = excluded.deadline,
            relevanceScore = excluded.relevanceScore, startTime = excluded.startTime, updatedAt = excluded.updatedAt,
            body = excluded.body
        """

    private static let columns = "id, bundleId, deviceId, attributesType, state, key, deadline, relevanceScore, startTime, createdAt, updatedAt, body, channelId"

    /// One row: the statement and its values.
    static func statement(_ row: Row) -> (sql: String, values: [(any PostgresDynamicTypeEncodable)?]) {
        (
            "INSERT INTO activity (\(columns)) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) \(upsert)",
            [
                row.id, row.bundleId, row.deviceId, row.attributesType, row.state, row.key, row.deadline, row.relevanceScore,
                row.startTime, row.createdAt, row.updatedAt, row.body, row.channelId,
            ]
        )
    }

    /// Several rows of distinct activities in one statement, as arrays (a column that may be
    /// NULL travels with a flag, arrays of optionals being beyond postgres-nio's encoding).
    static func statement(_ rows: [Row]) -> (sql: String, values: [(any PostgresDynamicTypeEncodable)?]) {
        (
            """
            INSERT INTO activity (\(columns))
            SELECT id, bundleId, deviceId, attributesType, state, CASE WHEN hasKey THEN key END, CASE WHEN hasDeadline THEN deadline END,
                relevanceScore, startTime, createdAt, updatedAt, body, CASE WHEN hasChannel THEN channelId END
            FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bool[], $8::float8[], $9::bool[],
                $10::float8[], $11::float8[], $12::float8[], $13::float8[], $14::text[], $15::text[], $16::bool[])
                AS r(id, bundleId, deviceId, attributesType, state, key, hasKey, deadline, hasDeadline, relevanceScore, startTime,
                    createdAt, updatedAt, body, channelId, hasChannel)
            \(upsert)
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
