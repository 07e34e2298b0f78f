import Foundation
import IsletCore
import Synchronization

/// One `Activity` object per activity id in the process, so that every holder of an activity
/// sees the same state.
final class Registry: Sendable {
    static let shared = Registry()
    private let activities = Mutex<[String: AnyObject]>([:])

    /// The object for a server's activity, brought up to date; `attributes` spares decoding them
    /// again when the caller has them.
    func activity<Attributes: ActivityAttributes>(
        for activity: IsletCore.Activity, attributes: Attributes?, connection: IsletConnection
    ) throws -> Activity<Attributes> {
        if let existing = activities.withLock({ $0[activity.id] }) as? Activity<Attributes> {
            try existing.apply(activity)
            return existing
        }
        let created = Activity<Attributes>(
            id: activity.id, attributes: try attributes ?? Wire.decode(Attributes.self, from: activity.attributes),
            snapshot: try Wire.snapshot(of: activity, as: Attributes.self), connection: connection
        )
        return activities.withLock { activities in
            if let raced = activities[activity.id] as? Activity<Attributes> { return raced }
            activities[activity.id] = created
            return created
        }
    }

    /// Brings the object for `id`, if there is one, up to date with an event.
    func receive(_ event: Event, for id: String) {
        (activities.withLock { $0[id] } as? any EventReceiver)?.receive(event)
    }
}

/// An object kept current by the event feed.
protocol EventReceiver: AnyObject {
    func receive(_ event: Event)
}
