import Foundation
import GRDB
import IsletCore
import IsletEngine

/// The statements every change to an activity runs, in this order: read its body, save it, add
/// an event. Public so that `islet-bench sqlite` measures SQLite alone running exactly these.
public enum ChangeStatements {
    /// The activity's stored body, by id.
    public static let activityBody = "SELECT body FROM activity WHERE id = ?"
    /// Inserts or saves an activity: id, bundleId, deviceId, attributesType, state, key,
    /// deadline, relevanceScore, startTime, createdAt, updatedAt, body, channelId.
    public static let saveActivity = """
        INSERT INTO activity
            (id, bundleId, deviceId, attributesType, state, key, deadline, relevanceScore, startTime,
             createdAt, updatedAt, body, channelId)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT(id) DO UPDATE SET
            state = excluded.state, deadline = excluded.deadline, relevanceScore = excluded.relevanceScore,
            startTime = excluded.startTime, updatedAt = excluded.updatedAt, body = excluded.body
        """
    /// Saves an activity whose state, deadline, start and relevance score are those stored (most
    /// changes: a new content): relevanceScore, updatedAt, body, then id, state, deadline,
    /// startTime as stored. It writes the row only — no index holds the columns it sets — where
    /// the upsert rewrites every index on state, deadline and the listing's order. Changes no
    /// row otherwise (a start, a state change, a new score), and `saveActivity` then runs.
    public static let saveContent = """
        UPDATE activity SET updatedAt = ?2, body = ?3
        WHERE id = ?4 AND state = ?5 AND deadline IS ?6 AND startTime = ?7 AND relevanceScore = ?1
        """
    /// Adds an event: time, type, bundleId, deviceId, activityId, data. An activity's event
    /// names the activity's previous one (`previous`, the head its row keeps), so its history
    /// is a walk back along the chain: no index of events by activity, which every change
    /// inserted into at a random place.
    public static let insertEvent = """
        INSERT INTO event (time, type, bundleId, deviceId, activityId, data, previous)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, (SELECT lastEventId FROM activity WHERE id = ?5))
        """
    /// Makes the event just added its activity's last: eventId, activityId.
    public static let linkEvent = "UPDATE activity SET lastEventId = ? WHERE id = ?"
}

/// Reads and writes activities as rows: the whole activity as JSON, plus the columns queries use.
enum ActivityRow {
    static let liveStates = "('pending', 'active', 'stale')"

    /// Writes the activity; returns its body, the activity in wire format.
    @discardableResult
    static func save(_ activity: Activity, now: Date, in db: Database) throws -> String {
        let body = try WireFormat.string(activity)
        let startTime = (activity.startedAt ?? activity.scheduledStart ?? activity.createdAt).timeIntervalSince1970
        let deadline = activity.nextDeadline?.timeIntervalSince1970
        try db.cachedStatement(sql: ChangeStatements.saveContent).execute(
            arguments: [
                activity.content.relevanceScore, now.timeIntervalSince1970, body, activity.id, activity.state.rawValue, deadline, startTime,
            ]
        )
        if db.changesCount != 1 {
            try db.cachedStatement(sql: ChangeStatements.saveActivity).execute(
                arguments: [
                    activity.id, activity.bundleId, activity.deviceId, activity.attributesType, activity.state.rawValue,
                    activity.key, deadline, activity.content.relevanceScore,
                    startTime, activity.createdAt.timeIntervalSince1970, now.timeIntervalSince1970, body, activity.channelId,
                ]
            )
        }
        decoded.remember(activity, body: body)
        return body
    }

    /// The query of a page of activities (`Store.activities`): their body and place, in the
    /// listing's order, one more than the page.
    static func listing(_ filter: ActivityFilter) -> (sql: String, arguments: StatementArguments) {
        var conditions: [String] = []
        var arguments: [any DatabaseValueConvertible] = []
        func condition(_ column: String, _ value: String?) {
            guard let value else { return }
            conditions.append("\(column) = ?")
            arguments.append(value)
        }
        condition("bundleId", filter.bundleId)
        condition("deviceId", filter.deviceId)
        condition("attributesType", filter.attributesType)
        if let states = filter.states {
            conditions.append("state IN (\(states.map { _ in "?" }.joined(separator: ", ")))")
            arguments += states.sorted().map(\.rawValue)
        }
        if let query = filter.query {
            // "~" sorts after every character of an id: the range is exactly the ids with the prefix.
            conditions.append("((id >= ? AND id < ?) OR substr(key, 1, ?) = ?)")
            arguments += [query.uppercased(), query.uppercased() + "~", query.count, query]
        }
        if let updatedSince = filter.updatedSince {
            conditions.append("updatedAt >= ?")
            arguments.append(updatedSince.timeIntervalSince1970)
        }
        if let after = filter.after {
            // The listing's order as one row value, which the activity_listing indexes seek to.
            conditions.append("(listingScore, startTime, id) > (?, ?, ?)")
            arguments += [-after.score, after.start, after.id]
        }
        let whereClause = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        let sql = """
            SELECT body, relevanceScore, startTime, id FROM activity \(whereClause)
            ORDER BY listingScore, startTime, id LIMIT ?
            """
        return (sql, StatementArguments(arguments + [filter.limit + 1]))
    }

    /// The activities a query selects, decoded. The query must select the `body` column.
    static func fetchAll(_ db: Database, sql: String, arguments: StatementArguments = []) throws -> [Activity] {
        try decode(String.fetchAll(db, sql: sql, arguments: arguments))
    }

    static func decode(_ bodies: [String]) throws -> [Activity] {
        let decoder = WireFormat.decoder()
        return try bodies.map { body in try decoder.decode(Activity.self, from: Data(body.utf8)) }
    }

    /// Recently written bodies and the activities they encode.
    static let decoded = DecodedActivities()

    static func fetchOne(_ db: Database, sql: String, arguments: StatementArguments = []) throws -> Activity? {
        try fetchAll(db, sql: sql, arguments: arguments).first
    }

    static func fetch(id: ActivityID, in db: Database) throws -> Activity? {
        // Every change starts here: a cached statement saves parsing the SQL each time, and the
        // memo decoding the body the last change wrote.
        let body = try String.fetchOne(db.cachedStatement(sql: ChangeStatements.activityBody), arguments: [id])
        return try body.map { body in try decoded.activity(id, body: body) ?? decode([body])[0] }
    }
}
