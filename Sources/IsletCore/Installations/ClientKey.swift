import Foundation

/// A publishable key of an app (`pk_…`, docs/installations.md): shipped inside the app's binary,
/// it may register installations of that app and nothing else. It is kept only as a hash; the
/// key itself is shown once, when made.
public struct ClientKey: Codable, Hashable, Sendable {
    /// `ck_` and 26 base32 characters: how the key is named in the API and the CLI.
    public var id: String
    public var bundleId: BundleID
    /// A name for people ("iOS 4.2 and later").
    public var name: String
    /// The key's first 11 characters (`pk_7Hq2xRkA`), to tell two keys apart.
    public var prefix: String
    public var createdAt: Date
    /// When it was revoked: it registers nothing from then on.
    public var revokedAt: Date?
    /// When it last registered an installation.
    public var lastUsedAt: Date?
    /// The installations it registered.
    public var installations: Int

    public init(
        id: String, bundleId: BundleID, name: String, prefix: String, createdAt: Date, revokedAt: Date? = nil, lastUsedAt: Date? = nil,
        installations: Int = 0
    ) {
        self.id = id
        self.bundleId = bundleId
        self.name = name
        self.prefix = prefix
        self.createdAt = createdAt
        self.revokedAt = revokedAt
        self.lastUsedAt = lastUsedAt
        self.installations = installations
    }

    /// The most client keys an app holds at once (revoked ones aside): enough to roll one while
    /// older builds still ship another.
    public static let maximumPerApp = 10
    /// The longest name, in bytes.
    public static let maximumName = 128

    /// What a key starts with: a client key is recognisable in an app's binary and in a log.
    public static let keyPrefix = "pk_"

    /// A new key id.
    public static func newID() -> String { "ck_" + Installation.randomBase32(26) }
}

/// `POST /v1/apps/{bundleId}/client-keys`.
public struct CreateClientKeyBody: Codable, Hashable, Sendable {
    public var name: String?

    public init(name: String? = nil) {
        self.name = name
    }

    /// The name, checked: up to 128 bytes, no control characters.
    public func checkedName() throws -> String {
        let name = name ?? ""
        guard name.utf8.count <= ClientKey.maximumName, !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw IsletError(.invalidRequest, "name: up to \(ClientKey.maximumName) bytes without control characters.")
        }
        return name
    }
}

/// The answer to `POST …/client-keys`: the key, shown this once.
public struct CreatedClientKey: Codable, Hashable, Sendable {
    public var clientKey: ClientKey
    /// The key itself (`pk_…`): put it in the app; it is not shown again.
    public var key: String

    public init(clientKey: ClientKey, key: String) {
        self.clientKey = clientKey
        self.key = key
    }
}

/// The answer to `DELETE /v1/apps/{bundleId}/client-keys/{id}`.
public struct RevokedClientKey: Codable, Hashable, Sendable {
    public var clientKey: ClientKey
    /// The installations whose credentials were revoked with it (`?installations=cut`).
    public var installationsCut: Int

    public init(clientKey: ClientKey, installationsCut: Int) {
        self.clientKey = clientKey
        self.installationsCut = installationsCut
    }
}

/// The answer to `POST /v1/apps/{bundleId}/user-verification-secret`: shown this once. The
/// backend signs each user's id with it (hex HMAC-SHA256) for its app to give as
/// `userIdSignature`.
public struct UserVerificationSecret: Codable, Hashable, Sendable {
    public var secret: String

    public init(secret: String) {
        self.secret = secret
    }
}
