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

    /// Its number, in outbox order.
    public var id: Int64
    /// What orders it: the activity (`activity:<id>`), or the channel (`channel:<id>`) for a broadcast.
    public var orderKey: String
    public var activityId: ActivityID?
    public var bundleId: BundleID
    public var deviceId: DeviceID?
    /// The broadcast channel, for a broadcast.
    public var channelId: String?
    /// `start`, `update` or `end`.
    public var event: String
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
        id: Int64 = 0, orderKey: String, activityId: ActivityID?, bundleId: BundleID, deviceId: DeviceID?, channelId: String? = nil,
        event: String, payload: String, alert: Bool, expiration: Date?, state: State = .pending, attempts: Int = 0,
        nextAttemptAt: Date, leaseUntil: Date? = nil, createdAt: Date, finishedAt: Date? = nil,
        apnsId: String = UUID().uuidString.lowercased(), traceparent: String? = nil
    ) {
        self.id = id
        self.orderKey = orderKey
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
