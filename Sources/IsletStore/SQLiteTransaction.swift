import Foundation
import GRDB
import IsletCore
import IsletEngine
import IsletSQL

/// One use case's savepoint in SQLite's write transaction: the SQL store's writes
/// (`SQLWriting`), with what SQLite's single writer does its own way — an activity's row saved
/// in place when only its content changed, an event numbered and chained to its activity's
/// previous one as it is added — and what they add to the commit.
final class SQLiteTransaction: SQLWriting {
    let session: SQLiteSession
    let now: Date
    var effects = Effects()
    private(set) var events: [EncodedEvent] = []
    private(set) var earliestDeadline: Date?

    init(db: Database, now: Date) {
        self.session = SQLiteSession(db)
        self.now = now
    }

    private var db: Database { session.db }

    @discardableResult
    func save(_ activity: Activity) throws -> String {
        if let deadline = activity.nextDeadline {
            earliestDeadline = min(earliestDeadline ?? deadline, deadline)
        }
        let row = try ActivityColumns(activity, now: now)
        try db.cachedStatement(sql: ChangeStatements.saveContent).execute(
            arguments: [row.relevanceScore, row.updatedAt, row.body, row.id, row.state, row.deadline, row.startTime]
        )
        if db.changesCount != 1 {
            try session.execute(ActivityColumns.upsert, row.values)
        }
        SQLRows.decoded.remember(activity, body: row.body)
        return row.body
    }

    func append(_ payload: EventPayload, bundleId: BundleID, deviceId: DeviceID, activityId: ActivityID?) throws {
        let data = payload.encodedData()
        try db.cachedStatement(sql: ChangeStatements.insertEvent)
            .execute(arguments: [now.timeIntervalSince1970, payload.type.rawValue, bundleId, deviceId, activityId, data])
        let id = db.lastInsertedRowID
        if let activityId {
            try db.cachedStatement(sql: ChangeStatements.linkEvent).execute(arguments: [id, activityId])
        }
        events.append(EncodedEvent(id: id, type: payload.type, time: now, bundleId: bundleId, deviceId: deviceId, activityId: activityId, dataJSON: data))
    }
}
