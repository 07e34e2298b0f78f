import Foundation

// The REST API's bodies, once: the server decodes them (`WireFormat.decodeRequest`, which refuses
// any field a type does not take) and the client encodes them. A round-trip test holds each
// encoding to its decoding.

/// `POST /v1/activities`: an `ActivityRequest`, plus the app when the admin key asks.
public struct StartActivityBody: Codable, Hashable, Sendable {
    /// The activity to start.
    public var request: ActivityRequest
    /// The app it is for, when the admin key asks (an app key acts for its own app).
    public var bundleId: BundleID?

    public init(request: ActivityRequest, bundleId: BundleID? = nil) {
        self.request = request
        self.bundleId = bundleId
    }

    public init(from decoder: any Decoder) throws {
        request = try ActivityRequest(from: decoder)
        bundleId = try decoder.container(keyedBy: AppKey.self).decodeIfPresent(BundleID.self, forKey: .bundleId)
    }

    public func encode(to encoder: any Encoder) throws {
        try request.encode(to: encoder)
        var container = encoder.container(keyedBy: AppKey.self)
        try container.encodeIfPresent(bundleId, forKey: .bundleId)
    }
}

/// `PUT /v1/activities/by-key/{key}`: the activity to start, or the content to update it with;
/// `end: true` ends it after (with `dismissalPolicy`).
public struct StartOrUpdateBody: Codable, Hashable, Sendable {
    /// The activity to start, whose content also updates a live one.
    public var request: ActivityRequest
    /// The app it is for, when the admin key asks.
    public var bundleId: BundleID?
    /// When the update was produced, as `ContentUpdate.timestamp`.
    public var timestamp: Date?
    /// How the activity leaves the Lock Screen, when the call also ends it.
    public var end: DismissalPolicy?

    private enum Keys: String, CodingKey { case bundleId, timestamp, end, dismissalPolicy }

    public init(request: ActivityRequest, bundleId: BundleID? = nil, timestamp: Date? = nil, end: DismissalPolicy? = nil) {
        self.request = request
        self.bundleId = bundleId
        self.timestamp = timestamp
        self.end = end
    }

    public init(from decoder: any Decoder) throws {
        request = try ActivityRequest(from: decoder)
        let container = try decoder.container(keyedBy: Keys.self)
        bundleId = try container.decodeIfPresent(BundleID.self, forKey: .bundleId)
        timestamp = try container.decodeIfPresent(Date.self, forKey: .timestamp)
        let policy = try container.decodeIfPresent(DismissalPolicy.self, forKey: .dismissalPolicy)
        if try container.decodeIfPresent(Bool.self, forKey: .end) ?? false {
            end = policy ?? .default
        } else if policy != nil {
            throw DecodingError.dataCorruptedError(
                forKey: .dismissalPolicy, in: container, debugDescription: "dismissalPolicy only applies with \"end\": true."
            )
        }
    }

    public func encode(to encoder: any Encoder) throws {
        try request.encode(to: encoder)
        var container = encoder.container(keyedBy: Keys.self)
        try container.encodeIfPresent(bundleId, forKey: .bundleId)
        try container.encodeIfPresent(timestamp, forKey: .timestamp)
        if let end {
            try container.encode(true, forKey: .end)
            try container.encode(end, forKey: .dismissalPolicy)
        }
    }
}

/// `POST /v1/apps`.
public struct CreateAppBody: Codable, Hashable, Sendable {
    /// The app's bundle id.
    public var bundleId: BundleID
    /// A name for people; the bundle id when absent.
    public var name: String?

    public init(bundleId: BundleID, name: String? = nil) {
        self.bundleId = bundleId
        self.name = name
    }
}

/// `PATCH /v1/apps/{bundleId}`: what changes; absent fields stay as they are.
public struct UpdateAppBody: Codable, Hashable, Sendable {
    /// Whether pushes a device would drop are refused with 400 instead.
    public var strictPushes: Bool?
    /// Whether delivery to real phones waits (held in the outbox) until it is resumed.
    public var deliveryPaused: Bool?

    public init(strictPushes: Bool? = nil, deliveryPaused: Bool? = nil) {
        self.strictPushes = strictPushes
        self.deliveryPaused = deliveryPaused
    }
}

/// `POST /v1/devices`.
public struct CreateDeviceBody: Codable, Hashable, Sendable {
    /// The device's id.
    public var id: DeviceID
    /// A name for people; the id when absent.
    public var name: String?
    /// `ios` (the default) or `android`.
    public var platform: DevicePlatform?

    public init(id: DeviceID, name: String? = nil, platform: DevicePlatform? = nil) {
        self.id = id
        self.name = name
        self.platform = platform
    }
}

/// `PUT /v1/devices/{id}/settings`: one app's settings on the device; absent fields stay as they are.
public struct SettingsBody: Codable, Hashable, Sendable {
    /// The app whose settings change.
    public var bundleId: BundleID?
    /// Whether the app may show Live Activities on the device.
    public var activitiesEnabled: Bool?
    /// Whether the app's pushes get the larger budget.
    public var frequentUpdates: Bool?
    /// On an Android phone Islet plays: whether the app is reached by its Firebase installation
    /// ID (firebase-messaging's `firebase_messaging_installation_id_enabled`). Turned on, the
    /// settings give `fcmInstallationId`; turned off (the app asks for a token again), that ID
    /// is retired and FCM answers `UNREGISTERED` for it.
    public var fcmInstallationIdEnabled: Bool?

    public init(bundleId: BundleID?, activitiesEnabled: Bool? = nil, frequentUpdates: Bool? = nil, fcmInstallationIdEnabled: Bool? = nil) {
        self.bundleId = bundleId
        self.activitiesEnabled = activitiesEnabled
        self.frequentUpdates = frequentUpdates
        self.fcmInstallationIdEnabled = fcmInstallationIdEnabled
    }
}

/// `POST /v1/apps/{bundleId}/keys`: a provider key for APNs-style JWTs, as the `.p8` file's
/// text (only its public half is kept) or as the public key.
public struct ProviderKeyBody: Codable, Hashable, Sendable {
    /// The key id a JWT names in `kid`.
    public var keyId: String
    /// The team id a JWT names in `iss`.
    public var teamId: String
    /// The `.p8` file's PEM text.
    public var privateKey: String?
    /// The public key's PEM text.
    public var publicKey: String?
    /// `team` or `topic` (the default): the limits it counts against (docs/delivery.md, "Key sets").
    public var kind: KeyScope?
    /// The environment the key is limited to; both when left out (a key from before 2025).
    public var environment: APNsEnvironment?

    public init(
        keyId: String, teamId: String, privateKey: String? = nil, publicKey: String? = nil, kind: KeyScope? = nil,
        environment: APNsEnvironment? = nil
    ) {
        self.keyId = keyId
        self.teamId = teamId
        self.privateKey = privateKey
        self.publicKey = publicKey
        self.kind = kind
        self.environment = environment
    }
}

/// `PUT /v1/apps/{bundleId}/activity-types/{name}`: the shapes the app's types decode (see `Shape`).
public struct ActivityTypeBody: Codable, Hashable, Sendable {
    /// The `ActivityAttributes` shape.
    public var attributes: JSONValue?
    /// The `ContentState` shape.
    public var contentState: JSONValue?

    public init(attributes: JSONValue? = nil, contentState: JSONValue? = nil) {
        self.attributes = attributes
        self.contentState = contentState
    }
}

/// `POST /v1/apps/{bundleId}/channels`.
public struct CreateChannelBody: Codable, Hashable, Sendable {
    /// 0: no message stored; 1: the most recent message kept for 8 hours.
    public var storagePolicy: Int
    /// For an app that delivers to real phones: the environment the channel is made in at
    /// Apple (needed only when the app has credentials for both).
    public var environment: APNsEnvironment?

    public init(storagePolicy: Int, environment: APNsEnvironment? = nil) {
        self.storagePolicy = storagePolicy
        self.environment = environment
    }
}

/// `POST /v1/apps/{bundleId}/channels/{channelId}/broadcast`: an update (`"event": "update"`
/// with an update's members) or an end (`"event": "end"` with an end's members) for every
/// activity joined to the channel.
public struct BroadcastBody: Codable, Hashable, Sendable {
    public var change: Activity.PushedChange

    private enum Keys: String, CodingKey { case event }

    public init(_ change: Activity.PushedChange) {
        self.change = change
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        switch try container.decode(String.self, forKey: .event) {
        case "update": change = .update(try ContentUpdate(from: decoder))
        case "end": change = .end(try EndRequest(from: decoder))
        default:
            throw DecodingError.dataCorruptedError(forKey: .event, in: container, debugDescription: "event is update or end")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        switch change {
        case .update(let update):
            try container.encode("update", forKey: .event)
            try update.encode(to: encoder)
        case .end(let end):
            try container.encode("end", forKey: .event)
            try end.encode(to: encoder)
        }
    }
}

private enum AppKey: String, CodingKey { case bundleId }

/// What a real phone's app saw happen to an activity, which Islet cannot see.
public enum PhoneReportState: String, Codable, Hashable, Sendable, CaseIterable {
    /// The person dismissed the card (an `activity.dismissed` webhook, `by: person`).
    case dismissed
    /// The activity ended on the phone (an `activity.ended` webhook, `by: phone`).
    case ended
}

/// `POST /v1/activities/{id}/phone-report`.
public struct PhoneReportBody: Codable, Hashable, Sendable {
    public var state: PhoneReportState

    public init(state: PhoneReportState) {
        self.state = state
    }
}
