import Foundation
import GRDB
import IsletCore
import IsletEngine
import IsletSQL

/// The statements every change to an activity runs, in this order: read its body, save it, add
/// an event. Public so that `islet-bench sqlite` measures SQLite alone running exactly these.
public enum ChangeStatements {
    /// The activity's stored body, by id.
    public static let activityBody = "SELECT body FROM activity WHERE id = ?"
    /// Inserts or saves an activity: id, bundleId, deviceId, attributesType, state, key,
    /// deadline, relevanceScore, startTime, createdAt, updatedAt, body, channelId.
    public static let saveActivity = SQLDialect.sqlitePlaceholders(ActivityColumns.upsert)
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
