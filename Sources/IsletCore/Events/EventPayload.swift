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

/// A push token issued or rotated.
public struct PushTokenChange: Codable, Hashable, Sendable {
    /// Which token: an activity's update token or a device's push-to-start token for an app.
    public enum Kind: String, Codable, Hashable, Sendable {
        case activity
        case pushToStart
    }

    /// The new token, 64 hexadecimal characters.
    public var pushToken: String
    /// Which token it is.
    public var kind: Kind

    /// Creates a token change.
    public init(pushToken: String, kind: Kind = .activity) {
        self.pushToken = pushToken
        self.kind = kind
    }
}
