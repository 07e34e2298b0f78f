/// The kinds of change Islet records, in order, for every activity and device.
public enum EventType: String, Codable, Sendable, CaseIterable {
    /// An activity was requested (its `data` is the whole activity).
    case started
    /// An activity's content changed (`content`, `timestamp`).
    case contentUpdated
    /// An activity moved to another lifecycle state (`from`, `to`, `reason`, `at`).
    case stateChanged
    /// An alerting update or a scheduled start asks displays to alert (`title`, `body`, `sound`).
    case alert
    /// An update was ignored by the lifecycle rules (`reason`, `message`, what was sent).
    case updateIgnored
    /// An activity's push token was issued or rotated (`pushToken`).
    case pushTokenUpdated
    /// A device's settings for an app changed (`bundleId`, `device`, `activitiesEnabled`, …).
    case settingsChanged
    /// The layout that draws an activity's type was registered, replaced or removed
    /// (`attributesType`, `revision`): displays draw the activity again.
    case layoutChanged
    /// A line of an activity's delivery log: a request to Apple and its answer, or a decision
    /// (queued, coalesced, held) — see `DeliveryReport` and docs/delivery.md.
    case delivery
    /// An app's priority-10 budget on a phone ran out: the push that spent its last unit was
    /// taken (`perHour`, `spent`, `nextRefillAt`): until a unit comes back, updates go at 5.
    case budgetExhausted

    /// Whether a later event of the same type for the same activity makes this one obsolete, so
    /// a subscriber that falls behind may skip it and lose nothing it would show.
    public var isSupersededByNewer: Bool {
        self == .contentUpdated
    }
}
