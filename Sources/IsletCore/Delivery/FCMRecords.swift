import Foundation

/// An app's FCM credential as the API shows it: the service account's identity, never its
/// private key (docs/android.md).
public struct FCMCredential: Codable, Hashable, Sendable {
    public var bundleId: BundleID
    /// The Firebase project messages are sent to.
    public var projectId: String
    /// The service account.
    public var clientEmail: String
    public var privateKeyId: String
    /// Where access tokens come from (the account's `token_uri`).
    public var tokenUri: String
    /// Another FCM-compatible host to send to (`https://host:port`); FCM's own when `nil`.
    public var url: String?
    /// The authority trusted for `url` and the `token_uri`, PEM; the system's when `nil`.
    public var caCertificate: String?
    public var createdAt: Date
    /// Why it cannot be used: FCM refused its access token twice. Deliveries of the app are
    /// held until it is registered again.
    public var failure: String?

    public init(
        bundleId: BundleID, projectId: String, clientEmail: String, privateKeyId: String, tokenUri: String, url: String? = nil,
        caCertificate: String? = nil, createdAt: Date, failure: String? = nil
    ) {
        self.bundleId = bundleId
        self.projectId = projectId
        self.clientEmail = clientEmail
        self.privateKeyId = privateKeyId
        self.tokenUri = tokenUri
        self.url = url
        self.caCertificate = caCertificate
        self.createdAt = createdAt
        self.failure = failure
    }
}

/// An FCM credential as stored: what the API shows, and the service-account JSON (with its
/// private key) it never shows.
public struct StoredFCMCredential: Hashable, Sendable {
    public var credential: FCMCredential
    /// The service account's JSON, as registered.
    public var serviceAccount: String

    public init(credential: FCMCredential, serviceAccount: String) {
        self.credential = credential
        self.serviceAccount = serviceAccount
    }
}

/// A service account Islet issued, as Islet — playing Google — keeps it: no private key.
public struct IssuedAccount: Hashable, Sendable {
    public var projectId: String
    public var clientEmail: String
    public var privateKeyId: String
    /// The public half of the account's key, PEM.
    public var publicKey: String

    public init(projectId: String, clientEmail: String, privateKeyId: String, publicKey: String) {
        self.projectId = projectId
        self.clientEmail = clientEmail
        self.privateKeyId = privateKeyId
        self.publicKey = publicKey
    }
}

/// An access token Islet, playing Google, gave out: kept as a hash, with whose it is and until when.
public struct AccessGrant: Hashable, Sendable {
    /// SHA-256 of the token, hexadecimal.
    public var hash: String
    public var clientEmail: String
    public var projectId: String
    public var expiresAt: Date

    public init(hash: String, clientEmail: String, projectId: String, expiresAt: Date) {
        self.hash = hash
        self.clientEmail = clientEmail
        self.projectId = projectId
        self.expiresAt = expiresAt
    }
}

/// What an Android phone shows for one activity of an app: the last message's `data.islet`,
/// as the app would build its Live Update from it.
public struct AndroidNotificationRecord: Hashable, Sendable {
    /// The activity on this server that the messages keep.
    public var activityId: ActivityID
    public var deviceId: DeviceID
    public var bundleId: BundleID
    /// The sender's id for the activity (`data.islet.activityId`): the notification's tag.
    public var tag: String
    /// `data.islet`, as received.
    public var islet: String
    /// The name FCM gave the message (`projects/…/messages/…`).
    public var messageName: String
    public var receivedAt: Date

    public init(
        activityId: ActivityID, deviceId: DeviceID, bundleId: BundleID, tag: String, islet: String, messageName: String, receivedAt: Date
    ) {
        self.activityId = activityId
        self.deviceId = deviceId
        self.bundleId = bundleId
        self.tag = tag
        self.islet = islet
        self.messageName = messageName
        self.receivedAt = receivedAt
    }
}
