import Foundation
import GRDB
import IsletCore

extension SQLiteStore {
    /// Registers or replaces the layout of an app's activity type, and tells every activity of
    /// that type still on a display (a `layoutChanged` event each), in one transaction.
    /// The document must already be a valid layout.
    public func putLayout(bundleId: BundleID, attributesType: String, layout: JSONValue, now: Date) async throws -> LayoutRecord {
        try await write(now: now) { db, log in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM app WHERE bundleId = ?", arguments: [bundleId]) != nil else {
                throw IsletError(.appNotFound, "No app \(bundleId).")
            }
            let previous = try Int.fetchOne(
                db, sql: "SELECT revision FROM layout WHERE bundleId = ? AND attributesType = ?", arguments: [bundleId, attributesType]
            )
            let record = LayoutRecord(
                bundleId: bundleId, attributesType: attributesType, layout: layout, revision: (previous ?? 0) + 1, updatedAt: now
            )
            try db.execute(
                sql: """
                    INSERT INTO layout (bundleId, attributesType, body, revision, updatedAt) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT(bundleId, attributesType) DO UPDATE SET
                        body = excluded.body, revision = excluded.revision, updatedAt = excluded.updatedAt
                    """,
                arguments: [bundleId, attributesType, try WireFormat.string(layout), record.revision, now.timeIntervalSince1970]
            )
            try Self.recordLayoutChange(bundleId: bundleId, attributesType: attributesType, revision: record.revision, log: &log, db: db)
            return record
        }
    }

    /// Removes the layout of an app's activity type; its activities are drawn with the default
    /// card from then on. Returns whether there was one.
    public func deleteLayout(bundleId: BundleID, attributesType: String, now: Date) async throws -> Bool {
        try await write(now: now) { db, log in
            try db.execute(
                sql: "DELETE FROM layout WHERE bundleId = ? AND attributesType = ?", arguments: [bundleId, attributesType]
            )
            guard db.changesCount > 0 else { return false }
            try Self.recordLayoutChange(bundleId: bundleId, attributesType: attributesType, revision: 0, log: &log, db: db)
            return true
        }
    }

    /// The layout of an app's activity type, if one is registered.
    public func layout(bundleId: BundleID, attributesType: String) async throws -> LayoutRecord? {
        try await read { db in
            try Row.fetchOne(
                db, sql: "SELECT * FROM layout WHERE bundleId = ? AND attributesType = ?", arguments: [bundleId, attributesType]
            ).map(Self.layoutRecord)
        }
    }

    /// An app's layouts, by activity type.
    public func layouts(bundleId: BundleID) async throws -> [LayoutRecord] {
        try await read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM layout WHERE bundleId = ? ORDER BY attributesType", arguments: [bundleId])
                .map(Self.layoutRecord)
        }
    }

    private static func layoutRecord(_ row: Row) throws -> LayoutRecord {
        LayoutRecord(
            bundleId: row["bundleId"], attributesType: row["attributesType"],
            layout: try WireFormat.decoder().decode(JSONValue.self, from: Data((row["body"] as String).utf8)),
            revision: row["revision"], updatedAt: Date(timeIntervalSince1970: row["updatedAt"])
        )
    }

    private static func recordLayoutChange(
        bundleId: BundleID, attributesType: String, revision: Int, log: inout EventLog, db: Database
    ) throws {
        let shown = try ActivityRow.fetchAll(
            db, sql: "SELECT body FROM activity WHERE bundleId = ? AND attributesType = ? AND state != 'dismissed'",
            arguments: [bundleId, attributesType]
        )
        for activity in shown {
            try log.record(
                .layoutChanged(LayoutChange(attributesType: attributesType, revision: revision)),
                bundleId: bundleId, deviceId: activity.deviceId, activityId: activity.id, in: db
            )
        }
    }
}
