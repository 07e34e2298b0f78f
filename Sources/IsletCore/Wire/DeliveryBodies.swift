import Foundation

// The provider side's bodies (docs/delivery.md), once, for the server and the client.

/// `PUT /v1/apps/{bundleId}/delivery`: an app's Apple credentials for one environment.
public struct DeliveryCredentialBody: Codable, Hashable, Sendable {
    public var teamId: String
    public var keyId: String
    /// The `.p8` file's PEM text. Kept by the server, never returned.
    public var privateKey: String
    public var environment: APNsEnvironment
    /// Another APNs-compatible host to send to (`https://host:port`).
    public var url: String?
    /// The authority (PEM) to trust for `url`.
    public var caCertificate: String?
    /// `team` (the default) or `topic` (docs/delivery.md, "Key sets").
    public var kind: KeyScope?
    /// A topic-specific key's topics (bundle ids); the app's own when left out.
    public var topics: [String]?
    /// A topic-specific key's related key.
    public var relatedKeyId: String?

    public init(
        teamId: String, keyId: String, privateKey: String, environment: APNsEnvironment, url: String? = nil, caCertificate: String? = nil,
        kind: KeyScope? = nil, topics: [String]? = nil, relatedKeyId: String? = nil
    ) {
        self.teamId = teamId
        self.keyId = keyId
        self.privateKey = privateKey
        self.environment = environment
        self.url = url
        self.caCertificate = caCertificate
        self.kind = kind
        self.topics = topics
        self.relatedKeyId = relatedKeyId
    }
}

/// `PUT /v1/devices/{id}/push-to-start-tokens/{attributesType}`.
public struct PushToStartTokenBody: Codable, Hashable, Sendable {
    /// The token, hexadecimal.
    public var token: String
    public var environment: APNsEnvironment
    /// The app, when the admin key reports it (an app's key reports for its own app).
    public var bundleId: BundleID?

    public init(token: String, environment: APNsEnvironment, bundleId: BundleID? = nil) {
        self.token = token
        self.environment = environment
        self.bundleId = bundleId
    }
}

/// `PUT /v1/activities/{id}/push-token`: the activity's update token on a phone.
public struct PushTokenBody: Codable, Hashable, Sendable {
    /// The token, hexadecimal.
    public var token: String
    /// The phone (the device the activity is on).
    public var device: DeviceID

    public init(token: String, device: DeviceID) {
        self.token = token
        self.device = device
    }
}

/// `GET /v1/devices/{id}`: a device and the tokens its apps reported.
public struct PhoneBody: Codable, Hashable, Sendable {
    public var device: Device
    /// Newest first, retired ones included.
    public var tokens: [PhoneToken]

    public init(device: Device, tokens: [PhoneToken]) {
        self.device = device
        self.tokens = tokens
    }
}

/// A line of `GET /v1/activities/{id}/deliveries`: when, and the report's fields beside it.
public struct DeliveryLine: Codable, Hashable, Sendable {
    public var time: Date
    public var report: DeliveryReport

    private enum Keys: String, CodingKey { case time }

    public init(time: Date, report: DeliveryReport) {
        self.time = time
        self.report = report
    }

    public init(from decoder: any Decoder) throws {
        report = try DeliveryReport(from: decoder)
        time = try decoder.container(keyedBy: Keys.self).decode(Date.self, forKey: .time)
    }

    public func encode(to encoder: any Encoder) throws {
        try report.encode(to: encoder)
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(time, forKey: .time)
    }
}

/// `POST /v1/deliveries/{id}/retry`: the delivery, waiting to be sent again.
public struct RetriedDelivery: Codable, Hashable, Sendable {
    public var delivery: Int64
    /// `pending`.
    public var state: String
    /// When the sender may take it: now.
    public var nextAttemptAt: Date

    public init(delivery: Int64, state: String, nextAttemptAt: Date) {
        self.delivery = delivery
        self.state = state
        self.nextAttemptAt = nextAttemptAt
    }
}

/// `PUT /v1/apps/{bundleId}/fcm`: an app's FCM credential (docs/android.md).
public struct FCMCredentialBody: Codable, Hashable, Sendable {
    /// The service-account JSON, as Google issues it.
    public var serviceAccount: JSONValue
    /// Another FCM-compatible host, `https://host[:port]`.
    public var url: String?
    /// The authority to trust for `url` and the account's `token_uri`, PEM.
    public var caCertificate: String?

    public init(serviceAccount: JSONValue, url: String? = nil, caCertificate: String? = nil) {
        self.serviceAccount = serviceAccount
        self.url = url
        self.caCertificate = caCertificate
    }
}

/// `PUT /v1/devices/{id}/fcm-token`: where FCM reaches an Android phone's app, its registration
/// token (`token`) or its Firebase installation ID (`fid`), one of the two.
public struct FCMTokenBody: Codable, Hashable, Sendable {
    public var token: String?
    public var fid: String?
    /// The app, when the admin key reports it (an app's key reports for its own app).
    public var bundleId: BundleID?

    public init(_ address: FCMAddress, bundleId: BundleID? = nil) {
        switch address {
        case .token(let token): self.token = token
        case .fid(let fid): self.fid = fid
        }
        self.bundleId = bundleId
    }

    /// The address the body gives, or `invalidRequest` when it gives none or both.
    public func address() throws(IsletError) -> FCMAddress {
        switch (token, fid) {
        case (let token?, nil): .token(token)
        case (nil, let fid?): .fid(fid)
        case (nil, nil):
            throw IsletError(.invalidRequest, "Give the phone's FCM registration token (\"token\") or its Firebase installation ID (\"fid\").")
        case (_?, _?):
            throw IsletError(.invalidRequest, "Give \"token\" or \"fid\", not both: a phone's app is reached at one of them, the newer replacing the older.")
        }
    }
}

/// `POST /v1/fcm/service-accounts`: a service account Islet, playing Google, issues.
public struct ServiceAccountBody: Codable, Hashable, Sendable {
    /// The Firebase project it sends to: 6 to 30 lower-case letters, digits and hyphens.
    public var projectId: String
    /// Where its access tokens come from; this server's push port by default.
    public var tokenUri: String?

    public init(projectId: String, tokenUri: String? = nil) {
        self.projectId = projectId
        self.tokenUri = tokenUri
    }
}
