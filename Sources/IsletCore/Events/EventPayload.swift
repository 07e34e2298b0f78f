import Foundation

/// What an event says, by kind. Its encoding is the event's `data` object on the wire.
public enum EventPayload: Hashable, Sendable {
    case started(Activity)
    case contentUpdated(ContentChange)
    case stateChanged(StateChange)
    case alert(Alert)
    case updateIgnored(IgnoredUpdate)
    case pushTokenUpdated(PushTokenChange)
    case settingsChanged(AppSettings)
    case layoutChanged(LayoutChange)
    case delivery(DeliveryReport)
    case budgetExhausted(BudgetExhaustion)

    /// The event's kind.
    public var type: EventType {
        switch self {
        case .started: .started
        case .contentUpdated: .contentUpdated
        case .stateChanged: .stateChanged
        case .alert: .alert
        case .updateIgnored: .updateIgnored
        case .pushTokenUpdated: .pushTokenUpdated
        case .settingsChanged: .settingsChanged
        case .layoutChanged: .layoutChanged
        case .delivery: .delivery
        case .budgetExhausted: .budgetExhausted
        }
    }

    /// The payload as the JSON text of the event's `data`.
    public func encodedData() -> String {
        let encoded: String?
        switch self {
        case .started(let value): encoded = try? WireFormat.string(value)
        case .contentUpdated(let value): encoded = try? WireFormat.string(value)
        case .stateChanged(let value): encoded = try? WireFormat.string(value)
        case .alert(let value): encoded = try? WireFormat.string(value)
        case .updateIgnored(let value): encoded = try? WireFormat.string(value)
        case .pushTokenUpdated(let value): encoded = try? WireFormat.string(value)
        case .settingsChanged(let value): encoded = try? WireFormat.string(value)
        case .layoutChanged(let value): encoded = try? WireFormat.string(value)
        case .delivery(let value): encoded = try? WireFormat.string(value)
        case .budgetExhausted(let value): encoded = try? WireFormat.string(value)
        }
        return encoded ?? "{}"
    }
}

/// An applied content update.
public struct ContentChange: Codable, Hashable, Sendable {
    /// The new content.
    public var content: ActivityContent
    /// The update's timestamp: the caller's, or the server's time when none was given.
    public var timestamp: Date

    /// Creates a content change.
    public init(content: ActivityContent, timestamp: Date) {
        self.content = content
        self.timestamp = timestamp
    }
}

/// A move from one lifecycle state to another, and why.
public struct StateChange: Codable, Hashable, Sendable {
    /// The state before.
    public var from: ActivityState
    /// The state after.
    public var to: ActivityState
    /// Why the state changed.
    public var reason: StateChangeReason
    /// When the change took effect by the rules; a deadline that passed while the server was
    /// down takes effect at its own time, not at the restart.
    public var at: Date

    /// Creates a state change.
    public init(from: ActivityState, to: ActivityState, reason: StateChangeReason, at: Date) {
        self.from = from
        self.to = to
        self.reason = reason
        self.at = at
    }
}

/// Why an activity changed state.
public enum StateChangeReason: String, Codable, Sendable, CaseIterable {
    /// A scheduled activity reached its start date.
    case scheduledStart
    /// The content's stale date passed.
    case staleDateReached
    /// An update brought fresh content to a stale activity.
    case contentUpdated
    /// The app ended the activity.
    case endedByApp
    /// The activity reached the maximum active duration and the system ended it.
    case maxDurationReached
    /// The dismissal policy's time came.
    case dismissalPolicy
    /// A person dismissed the activity from a display.
    case userDismissed
    /// A person turned Live Activities off for the app on the device.
    case appDisabled
    /// Islet renewed it before its maximum active duration ran out: a successor took its place.
    case renewed
    /// The activity ended on a real phone, as its app reported (`POST /v1/activities/{id}/phone-report`).
    case endedOnPhone
}

/// An update the rules ignored, with what was sent, so the history says why it did not apply.
public struct IgnoredUpdate: Codable, Hashable, Sendable {
    /// Why it was ignored.
    public var reason: IgnoreReason
    /// The reason in words.
    public var message: String
    /// `update` or `end`.
    public var action: String
    /// The content that was sent, if any.
    public var content: ActivityContent?
    /// The timestamp that was sent, or the server's time when none was.
    public var timestamp: Date
    /// The last applied update's timestamp, for comparison.
    public var lastUpdateTimestamp: Date?

    /// Creates a record of an ignored update; the message defaults to the reason's.
    public init(
        reason: IgnoreReason, action: String, content: ActivityContent?, timestamp: Date, lastUpdateTimestamp: Date?,
        message: String? = nil
    ) {
        self.reason = reason
        self.message = message ?? reason.error.message
        self.action = action
        self.content = content
        self.timestamp = timestamp
        self.lastUpdateTimestamp = lastUpdateTimestamp
    }
}

/// A push token issued or rotated by Islet on a device it plays, or reported by an app for a
/// real phone.
public struct PushTokenChange: Codable, Hashable, Sendable {
    /// Which token.
    public enum Kind: String, Codable, Hashable, Sendable {
        /// An activity's update token, issued by Islet as the device.
        case activity
        /// A device's push-to-start token for an app, issued by Islet as the device.
        case pushToStart
        /// An activity's update token on a real iPhone, as its app reported it (`PUT /v1/activities/{id}/push-token`).
        case phoneUpdate
        /// A real iPhone's push-to-start token for an activity type (`PUT /v1/devices/{id}/push-to-start-tokens/{type}`).
        case phonePushToStart
        /// An Android phone's FCM registration token for an app (`PUT /v1/devices/{id}/fcm-token`).
        case fcm
        /// An Android phone's Firebase installation ID for an app (`PUT /v1/devices/{id}/fcm-token` with `fid`).
        case fid

        /// As a webhook's `token.updated` names it: `update`, `push-to-start`, `fcm` or `fid`.
        public var webhookKind: String {
            switch self {
            case .activity, .phoneUpdate: "update"
            case .pushToStart, .phonePushToStart: "push-to-start"
            case .fcm: "fcm"
            case .fid: "fid"
            }
        }

        /// Whether a phone's app reported it (not issued by Islet playing the device).
        public var isReported: Bool { [.phoneUpdate, .phonePushToStart, .fcm, .fid].contains(self) }
    }

    /// The new token: 64 hexadecimal characters when Islet issued it; as the phone reported it otherwise.
    public var pushToken: String
    /// Which token it is.
    public var kind: Kind
    /// A push-to-start token's activity type, when the phone reported one.
    public var attributesType: String?

    /// Creates a token change.
    public init(pushToken: String, kind: Kind = .activity, attributesType: String? = nil) {
        self.pushToken = pushToken
        self.kind = kind
        self.attributesType = attributesType
    }
}

/// An app's budget of priority-10 pushes on a phone, run out (`budgetExhausted`).
public struct BudgetExhaustion: Codable, Hashable, Sendable {
    /// The budget: priority-10 pushes an hour (raised by the phone's frequent-updates setting).
    public var perHour: Int
    /// Those spent in the last hour, the one that ran it out included.
    public var spent: Int
    /// When the oldest of them leaves the hour and a unit comes back.
    public var nextRefillAt: Date

    public init(perHour: Int, spent: Int, nextRefillAt: Date) {
        self.perHour = perHour
        self.spent = spent
        self.nextRefillAt = nextRefillAt
    }
}
