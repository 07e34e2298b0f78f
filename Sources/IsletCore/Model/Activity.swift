import Foundation

/// One live card: what it shows, where it is in its lifecycle, and the deadlines ahead of it.
///
/// A value: the lifecycle rules (`Activity+Lifecycle.swift`) change it and say what happened;
/// adapters store and publish the result. Its `Codable` form is the REST API's activity object.
public struct Activity: Hashable, Sendable {
    /// The activity's identifier, a UUID string.
    public let id: ActivityID
    /// The app that owns it.
    public let bundleId: BundleID
    /// The device it is shown on.
    public let deviceId: DeviceID
    /// The name of its static shape, like an `ActivityAttributes` type's name.
    public let attributesType: String
    /// Static data, set at the start and never changed.
    public let attributes: JSONValue
    /// What it shows now.
    public var content: ActivityContent
    /// Where it is in its lifecycle.
    public var state: ActivityState
    /// Standard or transient.
    public let style: ActivityStyle
    /// How it receives remote updates; `nil` for none.
    public internal(set) var pushType: PushType?
    /// Its push token, when `pushType` is `.token`.
    public var pushToken: String?
    /// The caller's stable key for start-or-update (a CI job id), if it was started by key.
    public let key: String?
    /// When it was requested.
    public let createdAt: Date
    /// When a scheduled activity starts; `nil` once it has started or when it started at once.
    public var scheduledStart: Date?
    /// The alert shown when a scheduled activity starts.
    public var startAlert: Alert?
    /// When it became active.
    public var startedAt: Date?
    /// When the system ends it if the app has not: its start plus the maximum active duration.
    public var autoEndAt: Date?
    /// When it ended.
    public var endedAt: Date?
    /// When it leaves the Lock Screen, once it has ended.
    public var dismissAt: Date?
    /// When it was dismissed.
    public var dismissedAt: Date?
    /// The timestamp of the last applied update: older updates are ignored.
    public var lastUpdateTimestamp: Date?
    /// When the budgeted pushes of the last hour arrived, oldest first: the push budget's state —
    /// the app's on the device, as of this activity's last budgeted push (iOS counts the budget
    /// per app and phone; the engine hands the app's sends in and keeps them per app and device).
    public var budgetedPushes: [Date]?
    /// `true` when it is renewed before its maximum active duration runs out (docs/renewal.md).
    public var renew: Bool?
    /// When a renewing chain stops being renewed: the last activity ends at its own time after.
    public var renewUntil: Date?
    /// When it is renewed: its automatic end less `lifecycle.renewalLead`; `nil` when it is not.
    public var renewAt: Date?
    /// The activity that renewed it, once it has been renewed: changes to it go there.
    public var renewedBy: ActivityID?
    /// The activity it renews, when it is a renewal.
    public var renewedFrom: ActivityID?
    /// How it started; `nil` in activities recorded before Islet said so (they started through the API).
    public var source: ActivitySource?

    /// Creates an activity value; `Activity.request` is how a new activity comes to be.
    public init(
        id: ActivityID, bundleId: BundleID, deviceId: DeviceID, attributesType: String, attributes: JSONValue,
        content: ActivityContent, state: ActivityState, style: ActivityStyle = .standard, pushType: PushType? = nil,
        pushToken: String? = nil, key: String? = nil, createdAt: Date, scheduledStart: Date? = nil,
        startAlert: Alert? = nil, startedAt: Date? = nil, autoEndAt: Date? = nil, endedAt: Date? = nil,
        dismissAt: Date? = nil, dismissedAt: Date? = nil, lastUpdateTimestamp: Date? = nil
    ) {
        self.id = id
        self.bundleId = bundleId
        self.deviceId = deviceId
        self.attributesType = attributesType
        self.attributes = attributes
        self.content = content
        self.state = state
        self.style = style
        self.pushType = pushType
        self.pushToken = pushToken
        self.key = key
        self.createdAt = createdAt
        self.scheduledStart = scheduledStart
        self.startAlert = startAlert
        self.startedAt = startedAt
        self.autoEndAt = autoEndAt
        self.endedAt = endedAt
        self.dismissAt = dismissAt
        self.dismissedAt = dismissedAt
        self.lastUpdateTimestamp = lastUpdateTimestamp
    }

    /// The broadcast channel it listens to, if it was started with one.
    public var channelId: String? {
        if case .channel(let id) = pushType { return id }
        return nil
    }

    /// The next moment at which this activity changes by itself, if any: a lifecycle deadline
    /// or, for a live renewing activity, its renewal.
    public var nextDeadline: Date? {
        guard state.isLive, let renewAt else { return lifecycleDeadline }
        return min(renewAt, lifecycleDeadline ?? renewAt)
    }

    /// The next moment at which the rules change this activity by themselves, if any:
    /// the scheduled start, the stale date, the automatic end or the dismissal.
    public var lifecycleDeadline: Date? {
        switch state {
        case .pending:
            scheduledStart
        case .active:
            [content.staleDate, autoEndAt].compactMap { $0 }.min()
        case .stale:
            autoEndAt
        case .ended:
            dismissAt
        case .dismissed:
            nil
        }
    }
}

extension Activity: Codable {
    enum CodingKeys: String, CodingKey {
        case id, bundleId, deviceId = "device", attributesType, attributes, content
        case state = "activityState", style, pushType, pushToken, key, createdAt, scheduledStart, startAlert
        case startedAt, autoEndAt, endedAt, dismissAt, dismissedAt, lastUpdateTimestamp, budgetedPushes
        case renew, renewUntil, renewAt, renewedBy, renewedFrom, source
    }
}
