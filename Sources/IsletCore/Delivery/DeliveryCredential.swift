import Foundation

/// Apple's two APNs environments: a token belongs to one, and is sent to its host.
public enum APNsEnvironment: String, Codable, Hashable, Sendable, CaseIterable {
    /// Apps built for development (Xcode): `api.sandbox.push.apple.com`.
    case development
    /// Apps from TestFlight and the App Store: `api.push.apple.com`.
    case production

    /// Apple's push host for the environment.
    public var host: String {
        switch self {
        case .development: "api.sandbox.push.apple.com"
        case .production: "api.push.apple.com"
        }
    }

    /// Apple's channel-management host and port for the environment.
    public var channelManagement: String {
        switch self {
        case .development: "https://api-manage-broadcast.sandbox.push.apple.com:2195"
        case .production: "https://api-manage-broadcast.push.apple.com:2196"
        }
    }
}

/// How an app's changes reach real phones in one environment: one of its provider keys (an
/// environment holds a set of them, `KeySet`), and where to send. What the API answers never
/// holds the private key.
public struct DeliveryCredential: Codable, Hashable, Sendable {
    /// The app.
    public var bundleId: BundleID
    /// The environment whose tokens it serves.
    public var environment: APNsEnvironment
    /// The team id a provider token names in `iss`.
    public var teamId: String
    /// The key id a provider token names in `kid`.
    public var keyId: String
    /// Team-scoped (every topic of the team) or topic-specific (`topics`).
    public var kind: KeyScope
    /// A topic-specific key's topics (bundle ids), the app's among them.
    public var topics: [String]?
    /// A topic-specific key's related key: tokens of both may share a connection.
    public var relatedKeyId: String?
    /// Another APNs-compatible host to send to instead of Apple's (`https://host:port`).
    public var url: String?
    /// A certificate authority (PEM) to trust for `url`.
    public var caCertificate: String?
    /// When it was registered.
    public var createdAt: Date
    /// Why Apple refused its provider token, when it did twice in a row: deliveries wait until
    /// the credential is registered again.
    public var failure: String?

    public init(
        bundleId: BundleID, environment: APNsEnvironment, teamId: String, keyId: String, kind: KeyScope = .team, topics: [String]? = nil,
        relatedKeyId: String? = nil, url: String? = nil, caCertificate: String? = nil, createdAt: Date, failure: String? = nil
    ) {
        self.bundleId = bundleId
        self.environment = environment
        self.teamId = teamId
        self.keyId = keyId
        self.kind = kind
        self.topics = topics
        self.relatedKeyId = relatedKeyId
        self.url = url
        self.caCertificate = caCertificate
        self.createdAt = createdAt
        self.failure = failure
    }

    /// Where pushes go: `url`, or Apple's host for the environment.
    public var pushServer: String { url ?? "https://\(environment.host)" }
    /// Where channels are created and deleted: the same host as pushes when `url` is set,
    /// Apple's channel-management host for the environment otherwise.
    public var channelManagementServer: String { url ?? environment.channelManagement }
}

/// A token a real phone reported: a push-to-start token for an app and activity type, an
/// activity's update token, or an Android phone's FCM registration token or Firebase
/// installation ID for an app.
public struct PhoneToken: Codable, Hashable, Sendable {
    /// Which of the four.
    public enum Kind: String, Codable, Hashable, Sendable {
        /// APNs tokens.
        case pushToStart, update
        /// An FCM registration token: every activity of the app on that phone goes to it. Its
        /// environment is `production` (FCM has one).
        case fcm
        /// A Firebase installation ID, used as `fcm` is (`message.fid`): a phone has one of the
        /// two for an app, the newer replacing the older (`FCMAddress`).
        case fid
    }

    /// The token, lowercase hexadecimal.
    public var token: String
    public var kind: Kind
    public var bundleId: BundleID
    public var deviceId: DeviceID
    /// The activity type, for a push-to-start token.
    public var attributesType: String?
    /// The activity, for an update token.
    public var activityId: ActivityID?
    public var environment: APNsEnvironment
    /// When it was reported.
    public var createdAt: Date
    /// When it stopped being used: replaced by a newer one, or refused by Apple (410).
    public var retiredAt: Date?
    /// Why: `replaced`, or Apple's reason (`Unregistered`, `ExpiredToken`).
    public var retiredReason: String?
    /// The last answer Apple gave for it: when, the status, the reason.
    public var lastAt: Date?
    public var lastStatus: Int?
    public var lastReason: String?

    public init(
        token: String, kind: Kind, bundleId: BundleID, deviceId: DeviceID, attributesType: String? = nil,
        activityId: ActivityID? = nil, environment: APNsEnvironment, createdAt: Date
    ) {
        self.token = token
        self.kind = kind
        self.bundleId = bundleId
        self.deviceId = deviceId
        self.attributesType = attributesType
        self.activityId = activityId
        self.environment = environment
        self.createdAt = createdAt
    }

    /// Every JSON field in which Islet writes a phone's token, of any kind: an activity's update
    /// token, a push-to-start token, an Android phone's FCM registration token. A reader without
    /// a key is shown none of them (`EncodedEvent.withoutTokens`, `AppSettings.withoutTokens`).
    public static let fields = ["pushToken", "pushToStartToken", "fcmToken", "fcmInstallationId"]

    /// The token as logs show it: its first and last eight characters.
    public var shortened: String { PhoneToken.shorten(token) }

    /// How many retired tokens a holder (a phone's push-to-start tokens of a type, an activity's
    /// update tokens, a phone's FCM address) keeps: replacing one deletes the retired beyond these.
    public static let retiredKept = 8

    /// A token as logs show it.
    public static func shorten(_ token: String) -> String {
        token.count <= 16 ? token : "\(token.prefix(8))…\(token.suffix(8))"
    }

    /// Refuses what is not an APNs device token: hexadecimal, an even count of 64 to 200.
    public static func validate(_ token: String) throws(IsletError) {
        guard (64...200).contains(token.utf8.count), token.utf8.count.isMultiple(of: 2),
            token.allSatisfy({ $0.isASCII && $0.isHexDigit })
        else {
            throw IsletError(
                .invalidRequest,
                "A device token is hexadecimal, an even count of 64 to 200 characters (64 today); \"\(token.prefix(80))\" is not one."
            )
        }
    }

    /// The longest FCM registration token taken (Android's are about 160 characters).
    public static let maximumRegistrationLength = 1024

    /// Refuses what cannot be an FCM registration token: 1 to 1,024 letters, digits and `-_:.`.
    public static func validateRegistration(_ token: String) throws(IsletError) {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_:.")
        guard (1...maximumRegistrationLength).contains(token.utf8.count), token.allSatisfy(allowed.contains) else {
            throw IsletError(
                .invalidRequest,
                "An FCM registration token is 1 to \(maximumRegistrationLength) letters, digits and -_:. (Android's are about 160); \"\(token.prefix(80))\" is not one."
            )
        }
    }
}

/// One line of an activity's delivery log: an attempt and Apple's answer, or a decision
/// (coalesced, held, token retired). The data of a `delivery` event.
public struct DeliveryReport: Codable, Hashable, Sendable {
    /// What happened.
    public enum Outcome: String, Codable, Hashable, Sendable, CaseIterable {
        /// Written to the outbox.
        case queued
        /// Apple answered 200.
        case delivered
        /// Apple (or the network) failed in a way worth another try; `nextAttemptAt` says when.
        case retrying
        /// Given up: Apple refused it, or the attempts ran out.
        case failed
        /// Apple said the token is gone (410): it is retired, and nothing more goes to it.
        case tokenRetired
        /// Waiting: no update token yet, no credentials for the environment, or the credential refused.
        case held
        /// Not sent: a newer change for the same activity replaced it (`coalescedInto`).
        case coalesced
        /// Not sent, for a reason in `note` (the activity's token was retired, a channel's activity).
        case dropped
    }

    /// The delivery (the outbox row).
    public var delivery: Int64
    /// `start`, `update` or `end`.
    public var event: String
    public var outcome: Outcome
    /// The attempt's number, from 1; 0 for a decision without a request.
    public var attempt: Int
    /// The token (shortened) or the channel it went to.
    public var target: String?
    public var environment: APNsEnvironment?
    /// `apns-priority`, and why it was chosen.
    public var priority: Int?
    public var priorityReason: String?
    /// The request's `apns-id`.
    public var apnsId: String?
    /// Apple's HTTP status, or `nil` when there was no answer.
    public var status: Int?
    /// Apple's reason, when it refused.
    public var reason: String?
    /// How long Apple took to answer, in milliseconds.
    public var latencyMs: Double?
    /// The next attempt, when retrying.
    public var nextAttemptAt: Date?
    /// The delivery a coalesced one went into.
    public var coalescedInto: Int64?
    /// The decision or the failure in words.
    public var note: String?

    public init(
        delivery: Int64, event: String, outcome: Outcome, attempt: Int = 0, target: String? = nil,
        environment: APNsEnvironment? = nil, priority: Int? = nil, priorityReason: String? = nil, apnsId: String? = nil,
        status: Int? = nil, reason: String? = nil, latencyMs: Double? = nil, nextAttemptAt: Date? = nil,
        coalescedInto: Int64? = nil, note: String? = nil
    ) {
        self.delivery = delivery
        self.event = event
        self.outcome = outcome
        self.attempt = attempt
        self.target = target
        self.environment = environment
        self.priority = priority
        self.priorityReason = priorityReason
        self.apnsId = apnsId
        self.status = status
        self.reason = reason
        self.latencyMs = latencyMs
        self.nextAttemptAt = nextAttemptAt
        self.coalescedInto = coalescedInto
        self.note = note
    }
}
