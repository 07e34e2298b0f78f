import IsletCore
import Synchronization

/// A memo of decoding the body last written for each activity: an update reads back the body
/// the previous change wrote, and decoding it again was the largest single cost of a change. An
/// entry is used only when the row's body is the very string it was made from, so it is never
/// stale — a rolled-back write or a change made elsewhere simply misses. It holds at most
/// `capacity` activities and starts over when full. Both stores keep one.
public final class DecodedActivities: Sendable {
    static let capacity = 16_384
    private let entries = Mutex<[ActivityID: (body: String, activity: Activity)]>([:])

    public init() {}

    /// The activity `body` encodes, if it is the body last remembered for `id`.
    public func activity(_ id: ActivityID, body: String) -> Activity? {
        entries.withLock { entries in
            guard let entry = entries[id], entry.body == body else { return nil }
            return entry.activity
        }
    }

    /// Remembers the body an activity was just written as.
    public func remember(_ activity: Activity, body: String) {
        entries.withLock { entries in
            if entries.count >= Self.capacity, entries[activity.id] == nil { entries.removeAll(keepingCapacity: true) }
            entries[activity.id] = (body, activity)
        }
    }
}
