import Foundation
import IsletCore
import IsletEngine
import IsletSQL

/// One use case's savepoint in a write transaction on PostgreSQL: the SQL store's writes
/// (`SQLWriting`), with what several writers on one database do their own way — an activity's
/// row held back to go with the batch's others in one statement (`ActivityWrites`), events kept
/// here and written as the transaction commits, when they are given their ids
/// (`PostgresWriter`) — and what they add to the commit.
final class PostgresTransaction: SQLWriting {
    let session: PostgresSession
    let now: Date
    var effects = Effects()
    private(set) var events: [PendingEvent] = []
    private(set) var earliestDeadline: Date?

    /// An event to write at commit (Codable: a commit's notification carries it, `EventNotice`).
    struct PendingEvent: Codable {
        let time: Date
        let type: EventType
        let bundleId: BundleID
        let deviceId: DeviceID
        let activityId: ActivityID?
        let data: String

        /// The event as numbered `id`, in its wire form.
        func numbered(_ id: EventID) -> EncodedEvent {
            EncodedEvent(id: id, type: type, time: time, bundleId: bundleId, deviceId: deviceId, activityId: activityId, dataJSON: data)
        }
    }

    init(session: PostgresSession, now: Date) {
        self.session = session
        self.now = now
    }

    @discardableResult
    func save(_ activity: Activity) throws -> String {
        if let deadline = activity.nextDeadline {
            earliestDeadline = min(earliestDeadline ?? deadline, deadline)
        }
        let row = try ActivityColumns(activity, now: now)
        try session.save(row)
        session.cache.activities[activity.id] = activity
        SQLRows.decoded.remember(activity, body: row.body)
        return row.body
    }

    func append(_ payload: EventPayload, bundleId: BundleID, deviceId: DeviceID, activityId: ActivityID?) throws {
        events.append(PendingEvent(
            time: now, type: payload.type, bundleId: bundleId, deviceId: deviceId, activityId: activityId, data: payload.encodedData()
        ))
    }
}
