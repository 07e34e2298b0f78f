import Foundation

/// A delivery in the outbox: one APNs request to make, for one change.
public struct Delivery: Hashable, Sendable {
    /// Where a delivery stands.
    public enum State: String, Hashable, Sendable {
        /// Waiting for its turn (its activity's earlier deliveries) and its time (`nextAttemptAt`).
        case pending
        /// Being sent, until `leaseUntil`: a sender that dies mid-request gives it back then.
        case sending
        /// Waiting for something only someone else can bring: an update token, credentials.
        case held
        /// Apple answered 200.
        case delivered
        /// Given up (Apple refused it, or the attempts ran out).
        case failed
        /// Replaced by a newer change before it was sent.
        case coalesced
        /// Not sent: its token was retired, or its activity changes only by broadcast.
        case dropped

        /// Whether the delivery is over.
        public var isFinished: Bool { [.delivered, .failed, .coalesced, .dropped].contains(self) }
    }

    /// What a delivery tells the phone: `aps.event` (`data.islet.event` on Android).
    public enum Event: String, Hashable, Sendable {
        case start, update, end
    }

    /// What orders deliveries: one at a time per order, oldest first.
    public enum Order: Hashable, Sendable {
        /// An activity's changes; a renewed activity's end goes in its successor's order.
        case activity(ActivityID)
        /// A broadcast channel's.
        case channel(String)

        /// As stored: `activity:<id>` or `channel:<id>`.
        public var key: String {
            switch self {
            case .activity(let id): "activity:\(id)"
            case .channel(let id): "channel:\(id)"
            }
        }

        /// The order a stored key names; `nil` for a key of no known kind.
        public init?(key: String) {
            guard let colon = key.firstIndex(of: ":") else { return nil }
            let id = String(key[key.index(after: colon)...])
            switch key[..<colon] {
            case "activity": self = .activity(id)
            case "channel": self = .channel(id)
            default: return nil
            }
        }
    }

    /// Its number, in outbox order.
    public var id: Int64
    /// What orders it: its activity (its successor's, for a renewed activity's end), or a
    /// broadcast's channel.
    public var order: Order
    public var activityId: ActivityID?
    public var bundleId: BundleID
    public var deviceId: DeviceID?
    /// The broadcast channel, for a broadcast.
    public var channelId: String?
    public var event: Event
    /// The APNs payload, JSON, as it is sent.
    public var payload: String
    /// Whether it carries an alert (it then goes first within the budget).
    public var alert: Bool
    /// When Apple may stop trying to deliver it (`apns-expiration`).
    public var expiration: Date?
    public var state: State
    /// Attempts made so far.
    public var attempts: Int
    /// When it may next be sent.
    public var nextAttemptAt: Date
    /// Until when the sender that took it holds it.
    public var leaseUntil: Date?
    public var createdAt: Date
    public var finishedAt: Date?
    /// Its `apns-id`: the same for every attempt, so Apple's log and Islet's name one request.
    public var apnsId: String
    /// The W3C trace context (`traceparent`) of the change that wrote it, when tracing is on:
    /// each attempt's span joins that trace, whichever node sends it.
    public var traceparent: String?

    public init(
        id: Int64 = 0, order: Order, activityId: ActivityID?, bundleId: BundleID, deviceId: DeviceID?, channelId: String? = nil,
        event: Event, payload: String, alert: Bool, expiration: Date?, state: State = .pending, attempts: Int = 0,
        nextAttemptAt: Date, leaseUntil: Date? = nil, createdAt: Date, finishedAt: Date? = nil,
        apnsId: String = UUID().uuidString.lowercased(), traceparent: String? = nil
    ) {
        self.id = id
        self.order = order
        self.activityId = activityId
        self.bundleId = bundleId
        self.deviceId = deviceId
        self.channelId = channelId
        self.event = event
        self.payload = payload
        self.alert = alert
        self.expiration = expiration
        self.state = state
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.leaseUntil = leaseUntil
        self.createdAt = createdAt
        self.finishedAt = finishedAt
        self.apnsId = apnsId
        self.traceparent = traceparent
    }

}
