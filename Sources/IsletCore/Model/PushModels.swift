import Foundation

/// A provider's ES256 key, as registered for APNs-style JWTs: only its public half is kept.
public struct ProviderKey: Codable, Hashable, Sendable {
    /// The 10-character key id a JWT names in `kid`.
    public var keyId: String
    /// The 10-character team id a JWT names in `iss`.
    public var teamId: String
    /// The app whose topic the key may push to.
    public var bundleId: BundleID
    /// The public key, PEM.
    public var publicKey: String
    /// When it was registered.
    public var createdAt: Date
    /// Team-scoped or topic-specific (the default): the limits it counts against (`KeySet`).
    /// Either signs for the app it is registered under only: Islet's apps are apart.
    public var kind: KeyScope
    /// The environment it is limited to; `nil`, both (a key made before Apple's key kinds).
    public var environment: APNsEnvironment?

    /// Creates a key record.
    public init(
        keyId: String, teamId: String, bundleId: BundleID, publicKey: String, createdAt: Date, kind: KeyScope = .topic,
        environment: APNsEnvironment? = nil
    ) {
        self.keyId = keyId
        self.teamId = teamId
        self.bundleId = bundleId
        self.publicKey = publicKey
        self.createdAt = createdAt
        self.kind = kind
        self.environment = environment
    }
}

/// A broadcast channel (iOS 18): one push updates every activity started with it.
public struct BroadcastChannel: Codable, Hashable, Sendable {
    /// The channel id: random base64, as APNs issues them.
    public var id: String
    /// The app that owns it.
    public var bundleId: BundleID
    /// 0: no message stored; 1: the most recent message is kept for 8 hours and reaches
    /// activities that join later.
    public var storagePolicy: Int
    /// When it was created.
    public var createdAt: Date
    /// The APNs environment it was created in at Apple, when the app delivers to real phones
    /// (docs/delivery.md): its broadcasts are sent there too. `nil`: a channel of Islet's own.
    public var environment: APNsEnvironment?

    /// Creates a channel.
    public init(id: String, bundleId: BundleID, storagePolicy: Int, createdAt: Date, environment: APNsEnvironment? = nil) {
        self.id = id
        self.bundleId = bundleId
        self.storagePolicy = storagePolicy
        self.createdAt = createdAt
        self.environment = environment
    }

    /// How long a stored message stays deliverable at most.
    public static let messageLifetime: TimeInterval = 8 * 3600

    /// Until when a broadcast is kept for activities that join later, if at all: only on a
    /// channel that stores its most recent message, and — as `apns-expiration` says for any
    /// push — not with an expiration of 0 (deliver once, store nothing) or one already past;
    /// never beyond eight hours.
    ///
    /// - Parameters:
    ///   - expiration: The broadcast's `apns-expiration`, in Unix seconds.
    ///   - now: When it arrived.
    public func storesMessage(expiration: Int64, now: Date) -> Date? {
        guard storagePolicy == 1, expiration > 0 else { return nil }
        let expires = Date(timeIntervalSince1970: TimeInterval(expiration))
        guard expires > now else { return nil }
        return min(expires, now.addingTimeInterval(Self.messageLifetime))
    }
}

/// What a push-to-start asks a device to do.
public struct PushStart: Hashable, Sendable {
    /// The activity to request.
    public var request: ActivityRequest
    /// The push's timestamp.
    public var timestamp: Date?

    /// Creates a push-to-start.
    public init(request: ActivityRequest, timestamp: Date?) {
        self.request = request
        self.timestamp = timestamp
    }
}
