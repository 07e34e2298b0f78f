import Foundation

/// The kinds of webhook events: one closed set, versioned (docs/webhooks.md). Each is made from
/// the event log (`WebhookEvent.make`), except `webhook.test`.
public enum WebhookEventType: String, Codable, Sendable, CaseIterable {
    case activityStarted = "activity.started"
    case activityUpdated = "activity.updated"
    case activityStale = "activity.stale"
    case activityEnded = "activity.ended"
    case activityDismissed = "activity.dismissed"
    case activityRenewed = "activity.renewed"
    case tokenUpdated = "token.updated"
    case tokenInvalidated = "token.invalidated"
    case deliverySent = "delivery.sent"
    case deliveryFailed = "delivery.failed"
    case deliveryHeld = "delivery.held"
    case budgetExhausted = "budget.exhausted"
    /// Sent by `POST …/webhooks/{id}/test` only.
    case webhookTest = "webhook.test"

    /// The family (`activity` of `activity.started`), which a selection's `activity.*` names.
    public var family: Substring { rawValue.prefix { $0 != "." } }
}

/// The event types an endpoint asked for: exact names, families (`activity.*`) or `*`; none
/// given means every type.
public struct WebhookEventSelection: Hashable, Sendable, Codable {
    /// The names as given.
    public let names: [String]

    /// Checks each name; unknown ones are refused, naming the known.
    public init(_ names: [String]) throws {
        let families = Set(WebhookEventType.allCases.map(\.family))
        for name in names {
            let known = name == "*" || WebhookEventType(rawValue: name) != nil
                || (name.hasSuffix(".*") && families.contains(name.dropLast(2)))
            guard known else {
                throw IsletError(
                    .invalidRequest,
                    "events: \"\(name.prefix(100))\" is not a webhook event type; known: \(WebhookEventType.allCases.map(\.rawValue).joined(separator: ", ")), a family such as activity.*, or *."
                )
            }
        }
        // None named: every event, as `*` says.
        self.names = names.isEmpty ? ["*"] : names
    }

    public init(from decoder: any Decoder) throws {
        try self.init(try [String](from: decoder))
    }

    public func encode(to encoder: any Encoder) throws {
        try names.encode(to: encoder)
    }

    /// Whether the endpoint gets events of `type` (a test event always).
    public func includes(_ type: WebhookEventType) -> Bool {
        type == .webhookTest
            || names.contains { $0 == "*" || $0 == type.rawValue || ($0.hasSuffix(".*") && $0.dropLast(2) == type.family) }
    }
}

/// One webhook event, ready to send: its id (the receiver's `webhook-id`), its type, and the body.
public struct WebhookEvent: Sendable, Hashable {
    /// The schema's version, in every body.
    public static let version = 1

    /// `evt_` and the event log's id (`evt_test_…` for a test).
    public let id: String
    public let type: WebhookEventType
    /// The event log's id; 0 for a test.
    public let eventId: EventID
    /// The activity it is about, if any, else its device: an endpoint sends one activity's (or
    /// one device's) events in order.
    public let activityId: ActivityID?
    public let deviceId: DeviceID?
    /// The JSON body, exactly as signed and sent.
    public let body: String

    /// What a webhook event's `data` holds: the fields its type has, the others left out.
    public struct Data: JSONWritable, Sendable {
        /// The activity as the API returns it, as it stood just after the event.
        public var activity: Activity?
        public var source: String?
        public var by: String?
        public var from: ActivityID?
        public var to: ActivityID?
        public var kind: String?
        /// `token.updated`: whether a real phone's app reported the token (else Islet issued it as the device).
        public var reported: Bool?
        /// `token.updated` of a push-to-start token a phone reported: its activity type.
        public var attributesType: String?
        public var deviceId: DeviceID?
        public var activityId: ActivityID?
        /// A delivery log line (docs/delivery.md).
        public var delivery: DeliveryReport?
        public var reason: String?
        public var message: String?
        /// `budget.exhausted`: the budget, what was spent, and when a unit comes back.
        public var budget: BudgetExhaustion?

        public init() {}

        public func write(to json: inout JSONWriter) throws {
            json.beginObject()
            try json.member("activity", ifPresent: activity)
            json.member("activityId", string: activityId)
            json.member("attributesType", string: attributesType)
            try json.member("budget", encoding: budget)
            json.member("by", string: by)
            try json.member("delivery", ifPresent: delivery)
            json.member("deviceId", string: deviceId)
            json.member("from", string: from)
            json.member("kind", string: kind)
            json.member("message", string: message)
            json.member("reason", string: reason)
            if let reported {
                json.member("reported")
                json.bool(reported)
            }
            json.member("source", string: source)
            json.member("to", string: to)
            json.endObject()
        }
    }

    /// The body, written by `JSONWriter` (a test checks it is what the encoder writes).
    struct Body: JSONWritable {
        let id: String
        let type: WebhookEventType
        let createdAt: String
        let bundleId: BundleID
        let version: Int
        let data: Data

        func write(to json: inout JSONWriter) throws {
            json.beginObject()
            json.member("bundleId")
            json.string(bundleId)
            json.member("createdAt")
            json.string(createdAt)
            json.member("data")
            try data.write(to: &json)
            json.member("id")
            json.string(id)
            json.member("type")
            json.string(type.rawValue)
            json.member("version")
            json.integer(Int64(version))
            json.endObject()
        }
    }

    public init(
        id: String, type: WebhookEventType, eventId: EventID, createdAt: Date, bundleId: BundleID, activityId: ActivityID?, deviceId: DeviceID?,
        data: Data
    ) {
        self.id = id
        self.type = type
        self.eventId = eventId
        self.activityId = activityId
        self.deviceId = deviceId
        let body = Body(id: id, type: type, createdAt: Self.timestamp(createdAt), bundleId: bundleId, version: Self.version, data: data)
        self.body = (try? WireFormat.string(body)) ?? "{}"
    }

    /// `createdAt` as the body writes it: ISO 8601, UTC, with milliseconds.
    static func timestamp(_ date: Date) -> String { date.formatted(createdAtStyle) }

    private static let createdAtStyle = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    /// The webhook type an event of the log makes, if any, from the event alone (an endpoint
    /// that does not want it need not load its activity).
    public static func type(of event: Event) -> WebhookEventType? {
        switch event.type {
        case .started:
            return (try? event.data.decode(Activity.self))?.renewedFrom == nil ? .activityStarted : .activityRenewed
        case .contentUpdated: return .activityUpdated
        case .stateChanged:
            guard let change = try? event.data.decode(StateChange.self) else { return nil }
            switch change.to {
            case .stale: return .activityStale
            case .ended: return .activityEnded
            case .dismissed: return .activityDismissed
            case .pending, .active: return nil
            }
        case .pushTokenUpdated: return .tokenUpdated
        case .delivery:
            switch (try? event.data.decode(DeliveryReport.self))?.outcome {
            case .delivered: return .deliverySent
            case .failed: return .deliveryFailed
            case .tokenRetired: return .tokenInvalidated
            case .held: return .deliveryHeld
            case .queued, .retrying, .coalesced, .dropped, nil: return nil
            }
        case .budgetExhausted: return .budgetExhausted
        case .alert, .updateIgnored, .settingsChanged, .layoutChanged: return nil
        }
    }

    /// The webhook event an event of the log makes, given its activity as it stood just after
    /// it (`Activity.replaying`); `nil` when it makes none.
    public static func make(from event: Event, activity: Activity?) -> WebhookEvent? {
        guard let type = type(of: event) else { return nil }
        var data = Data()
        switch type {
        case .activityStarted, .activityUpdated, .activityStale:
            data.activity = activity
            if type == .activityStarted { data.source = (activity?.source ?? .api).rawValue }
        case .activityEnded, .activityDismissed:
            data.activity = activity
            data.by = (try? event.data.decode(StateChange.self)).map { by($0.reason, to: $0.to) }
        case .activityRenewed:
            data.activity = activity
            data.from = activity?.renewedFrom
            data.to = activity?.id
        case .tokenUpdated:
            // Islet's own (issued as the device) or the phone's (its app reported it).
            let change = try? event.data.decode(PushTokenChange.self)
            data.kind = change?.kind.webhookKind
            data.reported = change?.kind.isReported
            data.attributesType = change?.attributesType
            data.deviceId = event.deviceId
            data.activityId = event.activityId
        case .tokenInvalidated, .deliverySent, .deliveryFailed, .deliveryHeld:
            let report = try? event.data.decode(DeliveryReport.self)
            data.delivery = report
            data.deviceId = event.deviceId
            data.activityId = event.activityId
            data.reason = type == .deliveryHeld ? report?.note : report?.reason
        case .budgetExhausted:
            data.budget = try? event.data.decode(BudgetExhaustion.self)
            data.deviceId = event.deviceId
            data.activityId = event.activityId
        case .webhookTest:
            return nil
        }
        return WebhookEvent(
            id: "evt_\(event.id)", type: type, eventId: event.id, createdAt: event.time, bundleId: event.bundleId,
            activityId: event.activityId, deviceId: event.deviceId, data: data
        )
    }

    /// Who or what ended or dismissed an activity, as `by` says it.
    static func by(_ reason: StateChangeReason, to state: ActivityState) -> String {
        switch reason {
        case .endedByApp: "app"
        case .endedOnPhone: "phone"
        case .maxDurationReached: "system"
        case .renewed: "renewal"
        case .userDismissed, .appDisabled: state == .dismissed ? "person" : "phone"
        case .dismissalPolicy: "policy"
        case .scheduledStart, .staleDateReached, .contentUpdated: "system"
        }
    }
}

extension Activity {
    /// The activity as it stood just after the last of `history`'s events, replayed from
    /// `self` (its current form, for the fields no event carries): a `started` event's whole
    /// activity, then each content and state change. The display's drawing "as of an event"
    /// and the webhooks' `activity` are this one rule.
    public func replaying(_ history: some Sequence<Event>) throws -> Activity {
        var activity = self
        for event in history {
            switch event.type {
            case .started: activity = try event.data.decode(Activity.self)
            case .contentUpdated: activity.content = try event.data.decode(ContentChange.self).content
            case .stateChanged: activity.state = try event.data.decode(StateChange.self).to
            default: break
            }
        }
        return activity
    }
}
