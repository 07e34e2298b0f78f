import Foundation

/// `GET /v1/activities/{id}/status`: "why isn't it showing?" answered in one place — what the
/// phone last acknowledged and how far it is behind, the budget on that phone, the renewal, and
/// the last refusal (docs/renewal.md). Read from what is stored; `summary` says it in words.
public struct ActivityStatus: Codable, Hashable, Sendable {
    /// The activity described: for an id of a renewed activity, the live end of its chain.
    public var id: ActivityID
    /// The id asked about.
    public var requested: ActivityID
    public var state: ActivityState
    /// The latest content's timestamp (its last applied update), if it was updated.
    public var lastUpdateTimestamp: Date?
    /// Its delivery to a real phone; `nil` for an activity shown only on Islet's own displays.
    public var phone: Phone?
    /// Its renewal; `nil` when it does not renew.
    public var renewal: Renewal?
    /// The last time Apple or FCM refused it, or delivery gave up or held it.
    public var lastRefusal: Refusal?
    /// All of it in sentences, most telling first.
    public var summary: [String]

    enum CodingKeys: String, CodingKey {
        case id, requested, state = "activityState", lastUpdateTimestamp, phone, renewal, lastRefusal, summary
    }

    /// The phone's side.
    public struct Phone: Codable, Hashable, Sendable {
        public var device: DeviceID
        public var platform: DevicePlatform
        /// Whether the phone reported the activity's update token (an iPhone; always for Android).
        public var updateToken: Bool
        /// The last change the push service accepted for the phone.
        public var acknowledged: Acknowledged?
        /// Changes written and not yet accepted (pending, being sent, retrying, held).
        public var waiting: Int
        /// When the oldest of them was written.
        public var oldestWaitingSince: Date?
        /// The app's priority-10 budget on the phone (an iPhone).
        public var budget: Budget?

        public init(
            device: DeviceID, platform: DevicePlatform, updateToken: Bool, acknowledged: Acknowledged?, waiting: Int,
            oldestWaitingSince: Date?, budget: Budget?
        ) {
            self.device = device
            self.platform = platform
            self.updateToken = updateToken
            self.acknowledged = acknowledged
            self.waiting = waiting
            self.oldestWaitingSince = oldestWaitingSince
            self.budget = budget
        }
    }

    /// A change the push service accepted.
    public struct Acknowledged: Codable, Hashable, Sendable {
        public var delivery: Int64
        /// `start`, `update` or `end`.
        public var event: String
        public var at: Date
        public var priority: Int?

        public init(delivery: Int64, event: String, at: Date, priority: Int?) {
            self.delivery = delivery
            self.event = event
            self.at = at
            self.priority = priority
        }
    }

    /// The app's priority-10 pushes to the phone this hour, against its budget.
    public struct Budget: Codable, Hashable, Sendable {
        public var perHour: Int
        public var spent: Int
        public var left: Int
        /// When the oldest send of the hour leaves it, giving one back; `nil` when none was spent.
        public var nextRefillAt: Date?

        public init(perHour: Int, spent: Int, nextRefillAt: Date?) {
            self.perHour = perHour
            self.spent = spent
            self.left = max(0, perHour - spent)
            self.nextRefillAt = nextRefillAt
        }
    }

    /// Whether and when it is renewed.
    public struct Renewal: Codable, Hashable, Sendable {
        /// When its successor starts; `nil` once it will not be (ended, refused, past `renewUntil`).
        public var renewAt: Date?
        public var renewUntil: Date?
        /// Whether the renewal reaches the phone too.
        public var possible: Bool
        /// Why not, when it is not.
        public var why: String?
        /// The activity it renews, if it is a renewal.
        public var renewedFrom: ActivityID?

        public init(renewAt: Date?, renewUntil: Date?, possible: Bool, why: String?, renewedFrom: ActivityID?) {
            self.renewAt = renewAt
            self.renewUntil = renewUntil
            self.possible = possible
            self.why = why
            self.renewedFrom = renewedFrom
        }
    }

    /// A refusal or a decision not to send, from the delivery log.
    public struct Refusal: Codable, Hashable, Sendable {
        public var delivery: Int64
        public var event: String
        public var at: Date
        public var outcome: DeliveryReport.Outcome
        /// The push service's HTTP status and reason, when it answered.
        public var status: Int?
        public var reason: String?
        public var note: String?

        public init(delivery: Int64, event: String, at: Date, outcome: DeliveryReport.Outcome, status: Int?, reason: String?, note: String?) {
            self.delivery = delivery
            self.event = event
            self.at = at
            self.outcome = outcome
            self.status = status
            self.reason = reason
            self.note = note
        }
    }

    public init(
        id: ActivityID, requested: ActivityID, state: ActivityState, lastUpdateTimestamp: Date?, phone: Phone?, renewal: Renewal?,
        lastRefusal: Refusal?, summary: [String]
    ) {
        self.id = id
        self.requested = requested
        self.state = state
        self.lastUpdateTimestamp = lastUpdateTimestamp
        self.phone = phone
        self.renewal = renewal
        self.lastRefusal = lastRefusal
        self.summary = summary
    }
}

/// An answer with `warnings` beside its members: what did not stop a change but should be
/// known (a renewing activity a phone cannot renew). Absent when there are none.
public struct Warned<Value: Codable & Sendable>: Codable, Sendable {
    public var value: Value
    public var warnings: [String]

    private enum Keys: String, CodingKey { case warnings }

    public init(_ value: Value, warnings: [String]) {
        self.value = value
        self.warnings = warnings
    }

    public init(from decoder: any Decoder) throws {
        value = try Value(from: decoder)
        warnings = try decoder.container(keyedBy: Keys.self).decodeIfPresent([String].self, forKey: .warnings) ?? []
    }

    public func encode(to encoder: any Encoder) throws {
        try value.encode(to: encoder)
        guard !warnings.isEmpty else { return }
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(warnings, forKey: .warnings)
    }
}
