import Foundation

/// One install of an app on a phone that registered itself with a client key
/// (docs/installations.md). Islet keeps a device for it — same id — whose activities, tokens and
/// delivery log are any phone's; the installation's own credential may report only that device's
/// tokens and its activities' states.
public struct Installation: Codable, Hashable, Sendable {
    /// `inst_` and 26 base32 characters: the installation's and its device's id.
    public var id: String
    public var bundleId: BundleID
    public var platform: DevicePlatform
    /// The APNs environment the app is built for (`production` from the App Store and
    /// TestFlight, `development` from Xcode); its push-to-start tokens are for that one.
    public var environment: APNsEnvironment
    /// The user whose phone it is (docs/audiences.md): given with the backend's signature, or
    /// linked by the backend. `nil` for an installation that is a user of its own.
    public var userId: String?
    /// The client key that registered it.
    public var clientKeyId: String
    public var createdAt: Date
    /// When its credential was last used.
    public var lastSeenAt: Date
    /// Whether its credential was revoked (its client key cut, or the operator's word).
    public var revoked: Bool

    public init(
        id: String, bundleId: BundleID, platform: DevicePlatform, environment: APNsEnvironment, userId: String?, clientKeyId: String,
        createdAt: Date, lastSeenAt: Date, revoked: Bool = false
    ) {
        self.id = id
        self.bundleId = bundleId
        self.platform = platform
        self.environment = environment
        self.userId = userId
        self.clientKeyId = clientKeyId
        self.createdAt = createdAt
        self.lastSeenAt = lastSeenAt
        self.revoked = revoked
    }

    /// The device Islet keeps for it.
    public var deviceId: DeviceID { id }

    /// The user the installation's tags are kept on: its `userId`, or one named after it.
    public var audienceUser: String { userId ?? id }

    /// A new installation id.
    public static func newID() -> String { "inst_" + randomBase32(26) }

    /// Whether `id` is shaped as an installation's.
    public static func isInstallationID(_ id: String) -> Bool {
        id.hasPrefix("inst_") && id.utf8.count == 31 && id.dropFirst(5).allSatisfy { base32.contains($0) }
    }

    /// `count` characters of lowercase base32, from the system's random numbers.
    static func randomBase32(_ count: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return String((0..<count).map { _ in base32[Int(generator.next(upperBound: UInt8(32)))] })
    }

    private static let base32 = Array("abcdefghijklmnopqrstuvwxyz234567")
}

/// Where a hostile user of an app would push, and how far (docs/installations.md, "Limits").
public enum InstallationLimits {
    /// Installations one client key registers in an hour, over every address.
    public static let perClientKeyPerHour = 1_000
    /// Installations registered from one address in an hour, over every client key.
    public static let perAddressPerHour = 20
    /// Installations an app holds.
    public static let perApp = 100_000
    /// Tags an installation gives its user.
    public static let tags = 16
    /// Activity types an installation reports push-to-start tokens for.
    public static let pushToStartTypes = 32
    /// The largest body an installation sends.
    public static let maximumBody = 4_096
}

/// `POST /v1/installations`, sent with a client key.
public struct RegisterInstallationBody: Codable, Hashable, Sendable {
    public var bundleId: BundleID
    public var platform: DevicePlatform
    public var environment: APNsEnvironment?
    /// The app's id for the person signed in, with the backend's `userIdSignature`.
    public var userId: String?
    /// Hex HMAC-SHA256 of `userId` under the app's user verification secret.
    public var userIdSignature: String?
    public var tags: [String: String]?

    public init(
        bundleId: BundleID, platform: DevicePlatform, environment: APNsEnvironment? = nil, userId: String? = nil, userIdSignature: String? = nil,
        tags: [String: String]? = nil
    ) {
        self.bundleId = bundleId
        self.platform = platform
        self.environment = environment
        self.userId = userId
        self.userIdSignature = userIdSignature
        self.tags = tags
    }

    /// The body's fields checked where they enter: the user's id as an audience's, its
    /// signature hexadecimal, the tags as a user's and at most `InstallationLimits.tags`.
    public func check() throws {
        try App.validate(bundleId: bundleId)
        if let userId { try AppUser.checkExternalId(userId) }
        if let signature = userIdSignature {
            guard userId != nil else { throw IsletError(.invalidRequest, "userIdSignature goes with a userId.") }
            guard signature.utf8.count == 64, signature.allSatisfy(\.isHexDigit) else {
                throw IsletError(.invalidRequest, "userIdSignature: the 64 hexadecimal digits of HMAC-SHA256(userId) under the app's user verification secret.")
            }
        }
        if let tags {
            guard tags.count <= InstallationLimits.tags else {
                throw IsletError(.invalidRequest, "tags: at most \(InstallationLimits.tags) for an installation; got \(tags.count).")
            }
            try AppUser.checkTags(tags)
        }
    }
}

/// The answer to `POST /v1/installations`: the installation, and its credential, shown this once.
public struct RegisteredInstallation: Codable, Hashable, Sendable {
    public var installation: Installation
    /// The installation's own credential (`islet_inst_…`): keep it in the keychain.
    public var credential: String

    public init(installation: Installation, credential: String) {
        self.installation = installation
        self.credential = credential
    }
}

/// `PATCH /v1/installations/{id}`: the installation signs in (its backend signed the user's id),
/// out (`"userId": null`), or gives its user tags.
public struct InstallationUserBody: Codable, Hashable, Sendable {
    public var userId: String?
    public var userIdSignature: String?
    public var tags: [String: String]?

    public init(userId: String? = nil, userIdSignature: String? = nil, tags: [String: String]? = nil) {
        self.userId = userId
        self.userIdSignature = userIdSignature
        self.tags = tags
    }
}

/// The answer to `POST /v1/installations/{id}/credential`: the new credential, shown this once.
public struct InstallationCredential: Codable, Hashable, Sendable {
    public var installationId: String
    public var credential: String

    public init(installationId: String, credential: String) {
        self.installationId = installationId
        self.credential = credential
    }
}

/// What an installation reported and when, with the installation: what `GET /v1/installations`
/// and the console show (docs/installations.md, "Seeing them from the backend").
public struct InstallationReport: Codable, Hashable, Sendable {
    public var installation: Installation
    /// Its tokens of its app, current and retired, newest first.
    public var tokens: [PhoneToken]

    /// The report as the keyless console is shown it: each token cut to its first 8
    /// characters, enough to tell two apart and not to push to one (docs/security.md).
    public var withoutTokens: InstallationReport {
        var report = self
        report.tokens = tokens.map { token in
            var cut = token
            cut.token = token.token.count > 8 ? "\(token.token.prefix(8))…" : token.token
            return cut
        }
        return report
    }

    public init(installation: Installation, tokens: [PhoneToken]) {
        self.installation = installation
        self.tokens = tokens
    }
}
