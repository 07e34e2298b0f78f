/// Where FCM delivers one app's messages on one Android phone: the app instance's registration
/// token (`message.token`), or its Firebase installation ID (`message.fid`), which
/// firebase-messaging 25.1.2+ gives an app that opts in (`onRegistered(installationId)`) and
/// firebase-admin now prefers (docs/android.md, "Firebase installation IDs").
public enum FCMAddress: Hashable, Sendable {
    case token(String)
    case fid(String)

    /// The token or the ID itself.
    public var value: String {
        switch self {
        case .token(let value), .fid(let value): value
        }
    }

    /// The field of an FCM message (and of Islet's `fcm-token` body) that carries it.
    public var field: String {
        switch self {
        case .token: "token"
        case .fid: "fid"
        }
    }

    /// As logs and answers name it: "registration token" or "installation ID".
    public var name: String {
        switch self {
        case .token: "registration token"
        case .fid: "installation ID"
        }
    }

    /// How a phone token of this address is stored.
    public var kind: PhoneToken.Kind {
        switch self {
        case .token: .fcm
        case .fid: .fid
        }
    }

    /// The address a stored phone token is, if it is an FCM one.
    public init?(_ token: PhoneToken) {
        switch token.kind {
        case .fcm: self = .token(token.token)
        case .fid: self = .fid(token.token)
        case .pushToStart, .update: return nil
        }
    }

    /// A Firebase installation ID's length: 17 random bytes in URL-safe base64, cut to 22
    /// characters (the Firebase installations SDK's `FidGenerator`).
    public static let installationIdLength = 22

    /// Whether `text` is shaped as a Firebase installation ID: 22 characters of URL-safe base64
    /// whose first is `c`, `d`, `e` or `f` (the ID's first four bits are `0111`).
    public static func isInstallationId(_ text: String) -> Bool {
        let alphabet = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")
        guard text.utf8.count == installationIdLength, let first = text.first, "cdef".contains(first) else { return false }
        return text.allSatisfy(alphabet.contains)
    }

    /// Refuses what cannot be delivered to: a registration token as
    /// `PhoneToken.validateRegistration` reads one, an installation ID as `isInstallationId`.
    public func validate() throws(IsletError) {
        switch self {
        case .token(let token):
            try PhoneToken.validateRegistration(token)
        case .fid(let fid):
            guard Self.isInstallationId(fid) else {
                throw IsletError(
                    .invalidRequest,
                    "A Firebase installation ID is 22 characters of URL-safe base64 starting with c, d, e or f (FirebaseInstallations.getId()); \"\(fid.prefix(80))\" is not one."
                )
            }
        }
    }
}
