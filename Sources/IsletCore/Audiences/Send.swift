import Foundation

/// What a send does on each phone (docs/audiences.md).
public enum SendAction: String, Codable, Hashable, Sendable, CaseIterable {
    /// Starts the app's activity with the send's key on each phone that has none live.
    case start
    /// Updates the live activity with the key on each phone.
    case update
    /// Ends it.
    case end
}

/// Where a send is in its life.
public enum SendStatus: String, Codable, Hashable, Sendable, CaseIterable {
    /// Waiting for its `at`.
    case scheduled
    /// Reaching its phones.
    case running
    /// Every phone reached (or skipped, or failed).
    case done
    /// Cancelled before it ran, or stopped while it ran.
    case cancelled
}

/// Whom a send reaches: the phones of an app's users named, of the users carrying every tag,
/// the devices named, every phone of the app's users, or the phones another send started.
public enum Audience: Hashable, Sendable {
    case users([String])
    case tags([String: String])
    case devices([DeviceID])
    case all
    /// The phones the send with this id started: a start's follow-up (`endAt`).
    case startedBy(String)
    /// One activity, wherever its renewals have taken it: a single update or end given `at`
    /// (`POST /v1/activities/{id}/update`, `…/end`), kept as a send until then.
    case activity(ActivityID)

    /// The most users or devices one send names.
    public static let maximumNamed = 20_000
}

extension Audience: Codable {
    private enum Keys: String, CodingKey { case users, tags, devices, send, activity }

    public init(from decoder: any Decoder) throws {
        if let word = try? decoder.singleValueContainer().decode(String.self) {
            guard word == "all" else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "audience: \"all\", or an object with users, tags or devices."))
            }
            self = .all
            return
        }
        let container = try decoder.container(keyedBy: Keys.self)
        let given = container.allKeys
        guard given.count == 1, let key = given.first else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "audience: one of users, tags or devices (or \"all\"); got \(given.count).")
            )
        }
        switch key {
        case .users: self = .users(try container.decode([String].self, forKey: .users))
        case .tags: self = .tags(try container.decode([String: String].self, forKey: .tags))
        case .devices: self = .devices(try container.decode([DeviceID].self, forKey: .devices))
        case .send: self = .startedBy(try container.decode(String.self, forKey: .send))
        case .activity: self = .activity(try container.decode(ActivityID.self, forKey: .activity))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .all:
            var container = encoder.singleValueContainer()
            try container.encode("all")
        case .users(let ids):
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(ids, forKey: .users)
        case .tags(let tags):
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(tags, forKey: .tags)
        case .devices(let ids):
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(ids, forKey: .devices)
        case .startedBy(let id):
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(id, forKey: .send)
        case .activity(let id):
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(id, forKey: .activity)
        }
    }

    /// Checks what a caller names: at most 20,000 users or devices, each id as it must be, at
    /// least one tag. (`send` and `activity` are Islet's own: a start's follow-up, and a single
    /// update or end given `at`.)
    public func checkGiven() throws {
        switch self {
        case .users(let ids):
            guard !ids.isEmpty, ids.count <= Self.maximumNamed else {
                throw IsletError(.invalidRequest, "audience.users: 1 to \(Self.maximumNamed) user ids; got \(ids.count).")
            }
            for id in ids { try AppUser.checkExternalId(id) }
        case .devices(let ids):
            guard !ids.isEmpty, ids.count <= Self.maximumNamed else {
                throw IsletError(.invalidRequest, "audience.devices: 1 to \(Self.maximumNamed) device ids; got \(ids.count).")
            }
        case .tags(let tags):
            guard !tags.isEmpty else { throw IsletError(.invalidRequest, "audience.tags: at least one tag (or \"all\").") }
            try AppUser.checkTags(tags, field: "audience.tags")
        case .all: break
        case .startedBy, .activity: throw IsletError(.invalidRequest, "audience: one of users, tags or devices (or \"all\").")
        }
    }
}

/// How many phones a send reached, and how.
public struct SendCounts: Codable, Hashable, Sendable {
    /// Phones the audience resolved to (each once).
    public var targeted = 0
    public var started = 0
    public var updated = 0
    public var ended = 0
    /// Phones with nothing to do: a start where one is live under the key, an update or end
    /// where none is.
    public var skipped = 0
    /// Phones where the change was refused (ActivityKit's reason is on the target).
    public var failed = 0

    public init() {}

    /// Phones done, whatever the outcome.
    public var done: Int { started + updated + ended + skipped + failed }

    /// Counts phones with one outcome.
    public mutating func count(_ outcome: SendTargetOutcome, _ phones: Int = 1) {
        switch outcome {
        case .started: started += phones
        case .updated: updated += phones
        case .ended: ended += phones
        case .skipped: skipped += phones
        case .failed: failed += phones
        }
    }
}

/// What a send did on one phone.
public enum SendTargetOutcome: String, Codable, Hashable, Sendable, CaseIterable {
    case started, updated, ended, skipped, failed
}

/// `POST /v1/apps/{bundleId}/sends`: the change, whom it reaches and when.
public struct SendBody: Codable, Hashable, Sendable {
    public var action: SendAction
    /// Each phone's activity is the app's activity with this key on that phone.
    public var key: String
    public var audience: Audience
    /// When to carry it out (seconds since 1970); now when absent.
    public var at: Date?
    /// A start's activity: its type, attributes and first content.
    public var attributesType: String?
    public var attributes: JSONValue?
    /// A start's first content, an update's content, an end's last (optional).
    public var content: ActivityContent?
    public var alert: Alert?
    public var pushType: PushType?
    public var style: ActivityStyle?
    /// iOS 26's scheduled start, on the phone (not `at`, which holds the send on the server).
    public var start: Date?
    public var renew: Bool?
    public var renewUntil: Date?
    /// An end's dismissal policy.
    public var dismissalPolicy: DismissalPolicy?
    /// An update's or end's timestamp.
    public var timestamp: Date?
    /// A start's follow-ups: the phones it started end then (and leave at `dismissAt`).
    public var endAt: Date?
    public var dismissAt: Date?

    public init(
        action: SendAction, key: String, audience: Audience, at: Date? = nil, attributesType: String? = nil, attributes: JSONValue? = nil,
        content: ActivityContent? = nil, alert: Alert? = nil, pushType: PushType? = nil, style: ActivityStyle? = nil, start: Date? = nil,
        renew: Bool? = nil, renewUntil: Date? = nil, dismissalPolicy: DismissalPolicy? = nil, timestamp: Date? = nil, endAt: Date? = nil,
        dismissAt: Date? = nil
    ) {
        self.action = action
        self.key = key
        self.audience = audience
        self.at = at
        self.attributesType = attributesType
        self.attributes = attributes
        self.content = content
        self.alert = alert
        self.pushType = pushType
        self.style = style
        self.start = start
        self.renew = renew
        self.renewUntil = renewUntil
        self.dismissalPolicy = dismissalPolicy
        self.timestamp = timestamp
        self.endAt = endAt
        self.dismissAt = dismissAt
    }

    /// The longest key, in bytes.
    public static let maximumKey = 256

    /// The start each phone gets (the device filled in per phone).
    public func activityRequest(deviceId: DeviceID) throws(IsletError) -> ActivityRequest {
        guard let attributesType, let content else {
            throw IsletError(.invalidRequest, "A start names attributesType and content.")
        }
        return ActivityRequest(
            attributesType: attributesType, attributes: attributes ?? [:], content: content, pushType: pushType, style: style ?? .standard,
            alert: alert, start: start, deviceId: deviceId, renew: renew ?? false, renewUntil: renewUntil
        )
    }

    /// Checks the body as a whole, where it enters: the key, the audience, the fields the action
    /// takes (a start's request as a single start checks it), and the dates against `now`.
    public func check(now: Date) throws {
        try audience.checkGiven()
        try checkChange(now: now)
    }

    /// `check` but for the audience: for a send Islet makes with an audience of its own (a
    /// single update or end given `at`, whose route has found the activity).
    public func checkChange(now: Date) throws {
        guard !key.isEmpty, key.utf8.count <= Self.maximumKey else {
            throw IsletError(.invalidRequest, "key: 1 to \(Self.maximumKey) bytes; got \(key.utf8.count).")
        }
        for (name, date) in [("at", at), ("endAt", endAt), ("dismissAt", dismissAt), ("start", start), ("renewUntil", renewUntil), ("timestamp", timestamp)] {
            if let date, !WireFormat.isAcceptedDate(date.timeIntervalSince1970) {
                throw IsletError(.invalidRequest, "\(name): not a date the API takes.")
            }
        }
        switch action {
        case .start:
            try activityRequest(deviceId: .defaultDevice).validate()
            guard dismissalPolicy == nil, timestamp == nil else {
                throw IsletError(.invalidRequest, "A start takes no dismissalPolicy or timestamp (an end does; endAt and dismissAt schedule one).")
            }
            if let endAt, endAt <= (at ?? now) { throw IsletError(.invalidRequest, "endAt must come after the start (at, or now).") }
            if let dismissAt, dismissAt < (endAt ?? at ?? now) { throw IsletError(.invalidRequest, "dismissAt must not come before endAt.") }
        case .update, .end:
            guard attributesType == nil, attributes == nil, pushType == nil, style == nil, start == nil, renew == nil, renewUntil == nil,
                endAt == nil, dismissAt == nil
            else {
                throw IsletError(.invalidRequest, "An \(action.rawValue) takes content, alert, timestamp\(action == .end ? ", dismissalPolicy" : ""); the other fields are a start's.")
            }
            if action == .update {
                guard let content else { throw IsletError(.invalidRequest, "An update names content.") }
                try content.validate()
                guard dismissalPolicy == nil else { throw IsletError(.invalidRequest, "An update takes no dismissalPolicy (an end does).") }
            } else {
                try content?.validate()
                guard alert == nil else { throw IsletError(.invalidRequest, "An end takes no alert.") }
            }
        }
    }
}

/// `PATCH /v1/apps/{bundleId}/sends/{id}`: a scheduled send's new time.
public struct MoveSendBody: Codable, Hashable, Sendable {
    public var at: Date

    public init(at: Date) {
        self.at = at
    }
}

/// A send: one call's change for an audience, kept and carried out in the background.
public struct Send: Codable, Hashable, Sendable {
    /// `snd_` and a random part.
    public var id: String
    public var bundleId: BundleID
    public var status: SendStatus
    /// The change, whom it reaches and when, as given.
    public var body: SendBody
    public var counts: SendCounts
    /// Whether the audience has been resolved into its phones.
    public var resolved: Bool
    /// Where resolving goes on from (a user id, or a position).
    public var resolveCursor: String?
    /// A start's follow-up, made with it: the send that ends what it started.
    public var followUp: String?
    public var createdAt: Date
    public var updatedAt: Date
    /// When it finished (done or cancelled).
    public var finishedAt: Date?

    public init(
        id: String, bundleId: BundleID, status: SendStatus, body: SendBody, counts: SendCounts = SendCounts(), resolved: Bool = false,
        resolveCursor: String? = nil, followUp: String? = nil, createdAt: Date, updatedAt: Date, finishedAt: Date? = nil
    ) {
        self.id = id
        self.bundleId = bundleId
        self.status = status
        self.body = body
        self.counts = counts
        self.resolved = resolved
        self.resolveCursor = resolveCursor
        self.followUp = followUp
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.finishedAt = finishedAt
    }

    /// A new send's id: `snd_`, the time it was made (milliseconds, 12 hex digits, so an app's
    /// sends list in the order they were made) and 12 random hex digits.
    public static func newId(at now: Date) -> String {
        let milliseconds = UInt64(max(0, now.timeIntervalSince1970 * 1_000))
        let time = String(milliseconds, radix: 16)
        return "snd_" + String(repeating: "0", count: max(0, 12 - time.count)) + time
            + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased()
    }
}

/// One phone of a send, and what the send did there.
public struct SendTarget: Codable, Hashable, Sendable {
    public var sendId: String
    /// Its place in the send, from 1.
    public var seq: Int64
    public var deviceId: DeviceID
    /// `nil` while the phone waits.
    public var outcome: SendTargetOutcome?
    /// The activity started, updated or ended there.
    public var activityId: ActivityID?
    /// Why it was skipped or failed; for a phone reached by one broadcast, the channel.
    public var reason: String?
    public var doneAt: Date?

    public init(sendId: String, seq: Int64, deviceId: DeviceID, outcome: SendTargetOutcome? = nil, activityId: ActivityID? = nil, reason: String? = nil, doneAt: Date? = nil) {
        self.sendId = sendId
        self.seq = seq
        self.deviceId = deviceId
        self.outcome = outcome
        self.activityId = activityId
        self.reason = reason
        self.doneAt = doneAt
    }
}
