import Foundation
import GRDB
import IsletCore

/// Reads and writes activities as rows: the whole activity as JSON, plus the columns queries use.
enum ActivityRow {
    static let liveStates = "('pending', 'active', 'stale')"

    static func save(_ activity: Activity, now: Date, in db: Database) throws {
        if activity.state == .dismissed, activity.pushToken != nil {
            // A dismissed activity's token is unregistered, as an uninstalled app's would be.
            try PushTokens.retireActivityTokens(
                activity.id, reason: "activityDismissed", at: activity.dismissedAt ?? now, db: db
            )
        }
        let body = try WireFormat.string(activity)
        let startTime = (activity.startedAt ?? activity.scheduledStart ?? activity.createdAt).timeIntervalSince1970
        try db.execute(
            sql: """
                INSERT INTO activity
                    (id, bundleId, deviceId, attributesType, state, key, deadline, relevanceScore, startTime,
                     createdAt, updatedAt, body, channelId)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(id) DO UPDATE SET
                    state = excluded.state, deadline = excluded.deadline, relevanceScore = excluded.relevanceScore,
                    startTime = excluded.startTime, updatedAt = excluded.updatedAt, body = excluded.body
                """,
            arguments: [
                activity.id, activity.bundleId, activity.deviceId, activity.attributesType, activity.state.rawValue,
                activity.key, activity.nextDeadline?.timeIntervalSince1970, activity.content.relevanceScore,
                startTime, activity.createdAt.timeIntervalSince1970, now.timeIntervalSince1970, body, activity.channelId,
            ]
        )
    }

    /// The activities a query selects, decoded. The query must select the `body` column.
    static func fetchAll(_ db: Database, sql: String, arguments: StatementArguments = []) throws -> [Activity] {
        let decoder = WireFormat.decoder()
        return try String.fetchAll(db, sql: sql, arguments: arguments).map { body in
            try decoder.decode(Activity.self, from: Data(body.utf8))
        }
    }

    static func fetchOne(_ db: Database, sql: String, arguments: StatementArguments = []) throws -> Activity? {
        try fetchAll(db, sql: sql, arguments: arguments).first
    }

    static func fetch(id: ActivityID, owner: BundleID?, in db: Database) throws -> Activity {
        let found = try fetchAll(db, sql: "SELECT body FROM activity WHERE id = ?", arguments: [id]).first
        // Another app's activity is reported as missing: an app key learns nothing about it.
        guard let activity = found, owner == nil || owner == activity.bundleId else {
            throw IsletError(.activityNotFound, "No activity \(id).")
        }
        return activity
    }
}
