import Foundation
import IsletCore
import Synchronization

/// The overview's counts of what the event stream carried, per app, since the engine started
/// (`EventCounts`). The fan-out counts every commit it publishes — this node's, and on a shared
/// store every node's — so the totals are what the stream carried, kept by the server: a
/// console reloaded, or a second one opened, reads the same numbers.
final class EventTally: Sendable {
    private let since: Date
    private let counts = Mutex<[BundleID: EventCounts]>([:])

    init(since: Date) {
        self.since = since
    }

    /// Counts a published commit's events.
    func count(_ events: [EncodedEvent]) {
        counts.withLock { counts in
            for event in events {
                counts[event.bundleId, default: EventCounts(since: since)].count(event)
            }
        }
    }

    /// The totals of one app, or (`nil`) of every app.
    func counts(bundleId: BundleID?) -> EventCounts {
        counts.withLock { counts in
            guard let bundleId else {
                return counts.values.reduce(into: EventCounts(since: since)) { $0.add($1) }
            }
            return counts[bundleId] ?? EventCounts(since: since)
        }
    }
}
