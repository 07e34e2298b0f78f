import Foundation
import GRDB
import IsletCore

extension SQLiteStore {
    /// Events after `id` that pass `filter`, oldest first: how a stream resumes.
    public func events(after id: EventID, filter: EventFilter, limit: Int) async throws -> [EncodedEvent] {
        try await read { db in
            var sql = "SELECT * FROM event WHERE id > ?"
            var arguments: [any DatabaseValueConvertible] = [id]
            if let bundleId = filter.bundleId {
                sql += " AND bundleId = ?"
                arguments.append(bundleId)
            }
            if let deviceId = filter.deviceId {
                sql += " AND deviceId = ?"
                arguments.append(deviceId)
            }
            if let activityId = filter.activityId {
                sql += " AND activityId = ?"
                arguments.append(activityId)
            }
            sql += " ORDER BY id LIMIT ?"
            arguments.append(limit)
            return try Row.fetchAll(db, sql: sql, arguments: StatementArguments(arguments)).compactMap(Self.event(from:))
        }
    }

    /// An activity's whole history, oldest first; another app's activity is not found.
    public func history(of id: ActivityID, owner: BundleID?) async throws -> [EncodedEvent] {
        try await read { db in
            _ = try ActivityRow.fetch(id: id, owner: owner, in: db)
            return try Row.fetchAll(db, sql: "SELECT * FROM event WHERE activityId = ? ORDER BY id", arguments: [id])
                .compactMap(Self.event(from:))
        }
    }

    /// The id of the newest event, or 0 when there is none.
    public func lastEventID() async throws -> EventID {
        try await read { db in try EventID.fetchOne(db, sql: "SELECT MAX(id) FROM event") ?? 0 }
    }

    private static func event(from row: Row) -> EncodedEvent? {
        guard let type = EventType(rawValue: row["type"]) else { return nil }
        return EncodedEvent(
            id: row["id"], type: type, time: Date(timeIntervalSince1970: row["time"]), bundleId: row["bundleId"],
            deviceId: row["deviceId"], activityId: row["activityId"], dataJSON: row["data"]
        )
    }
}
