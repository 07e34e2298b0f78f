import Foundation
import GRDB
import IsletCore

extension SQLiteStore {
    /// Lets up to `limit` due deadlines take effect (scheduled starts, stale dates, automatic
    /// ends, dismissals), earliest first, in one transaction.
    ///
    /// Deadlines that passed while the server was down take effect at their own times.
    /// - Returns: How many activities changed; call again while it equals `limit`.
    public func fireDueDeadlines(now: Date, limit: Int = 256) async throws -> Int {
        let rules = self.rules
        return try await write(now: now) { db, log in
            let due = try ActivityRow.fetchAll(
                db, sql: "SELECT body FROM activity WHERE deadline <= ? ORDER BY deadline LIMIT ?",
                arguments: [now.timeIntervalSince1970, limit]
            )
            for var activity in due {
                let transition = try activity.handle(.advance, now: now, rules: rules)
                try ActivityRow.save(activity, now: now, in: db)
                try log.record(transition, of: activity, in: db)
            }
            return due.count
        }
    }

    /// The earliest deadline of any activity, if there is one.
    public func nextDeadline() async throws -> Date? {
        try await read { db in
            try Double.fetchOne(db, sql: "SELECT MIN(deadline) FROM activity").map(Date.init(timeIntervalSince1970:))
        }
    }

    /// Deletes dismissed activities, events and retired push tokens older than `date`, keeping
    /// the store's size bounded. (A push to a purged token answers `BadDeviceToken` rather than
    /// `410`, as Apple's does for a token long gone.)
    /// - Returns: How many activities, events and tokens were deleted.
    public func purge(before date: Date) async throws -> (activities: Int, events: Int, tokens: Int) {
        try await write(now: date) { db, _ in
            let cutoff = date.timeIntervalSince1970
            try db.execute(sql: "DELETE FROM activity WHERE state = 'dismissed' AND updatedAt < ?", arguments: [cutoff])
            let activities = db.changesCount
            try db.execute(sql: "DELETE FROM event WHERE time < ?", arguments: [cutoff])
            let events = db.changesCount
            try db.execute(sql: "DELETE FROM pushToken WHERE retiredAt < ?", arguments: [cutoff])
            return (activities, events, db.changesCount)
        }
    }
}
