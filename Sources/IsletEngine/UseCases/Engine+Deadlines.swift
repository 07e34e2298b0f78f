import Foundation
import IsletCore
import Logging

extension Engine {
    /// Deadlines fired per transaction, at most: keeps one transaction short.
    static let deadlineBatch = 256

    /// Lets every due deadline take effect (scheduled starts, stale dates, automatic ends,
    /// dismissals, renewals), earliest first, however many there are. Deadlines that passed while the
    /// server was down take effect at their own times.
    /// - Returns: How many activities changed.
    @discardableResult
    public func fireDueDeadlines() async throws -> Int {
        let (rules, batch) = (self.rules, Self.deadlineBatch)
        var total = 0
        while true {
            let (fired, renewals) = try await write { tx in
                let due = try tx.dueActivities(at: tx.now, limit: batch)
                var renewals: [ActivityID] = []
                for var activity in due {
                    if activity.lifecycleDeadline.map({ $0 <= tx.now }) ?? false {
                        try tx.change(&activity, .advance, rules: rules)
                    }
                    // A renewal starts another activity: each in a transaction of its own (`renew`).
                    if activity.state.isLive, let renewAt = activity.renewAt, renewAt <= tx.now { renewals.append(activity.id) }
                }
                tx.effects.deadlinesFired += due.count
                return (due.count, renewals)
            }
            for id in renewals {
                do {
                    try await renew(id)
                } catch where !Self.isOutage(error) {
                    // Even its refusal could not be written: the others are renewed all the same.
                    logger.error("A renewal failed", metadata: ["activity": "\(id)", "error": "\(error)"])
                }
            }
            total += fired
            if fired < batch { return total }
        }
    }

    /// The earliest deadline of any activity, if there is one.
    public func nextDeadline() async throws -> Date? {
        try await read { store in try store.nextDeadline() }
    }

    /// Deletes dismissed activities, events, retired tokens and finished deliveries older than
    /// `age` seconds, keeping the store's size bounded (`Transaction.purge`). (A push to a purged token answers `BadDeviceToken`
    /// rather than `410`, as Apple's does for a token long gone.)
    ///
    /// - Parameter batch: Rows of each kind deleted per transaction: the writer takes other
    ///   changes between batches.
    public func purgeHistory(olderThan age: TimeInterval, batch: Int = 2_000) async throws -> PurgeCount {
        let cutoff = clock.now().addingTimeInterval(-age)
        var total = PurgeCount()
        while true {
            let purged = try await write { tx in try tx.purge(before: cutoff, limit: batch) }
            total = total + purged
            if purged.largest < batch { return total }
        }
    }

    // MARK: Events

    /// Events after `id` that pass `filter`, oldest first: how a stream resumes.
    public func events(after id: EventID, filter: EventFilter, limit: Int) async throws -> [EncodedEvent] {
        try await read { store in try store.events(after: id, filter: filter, limit: limit) }
    }

    /// The id of the newest event, or 0 when there is none.
    public func lastEventID() async throws -> EventID {
        try await read { store in try store.lastEventID() }
    }

    // MARK: Health

    /// Why writes are failing, if they are (a full disk): see `Store.checkWrites`.
    public func writeFailure(quietInterval: Duration = .seconds(10)) async -> WriteFailure? {
        await store.checkWrites(quietInterval: quietInterval)
    }
}
