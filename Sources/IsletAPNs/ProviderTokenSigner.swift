import Foundation
import JWTKit
import Synchronization

/// Signs APNs provider tokens with a `.p8` key, as a provider does: ES256, `kid` and `iss`/`iat`.
public struct ProviderTokenSigner: Sendable {
    private let keys: JWTKeyCollection
    /// The key id.
    public let keyId: String
    /// The team id.
    public let teamId: String

    /// Loads the private key of a `.p8` file (PEM, PKCS #8).
    public init(p8 pem: String, keyId: String, teamId: String) async throws {
        let key = try ES256PrivateKey(pem: pem)
        keys = JWTKeyCollection()
        await keys.add(ecdsa: key, kid: JWKIdentifier(string: keyId))
        self.keyId = keyId
        self.teamId = teamId
    }

    /// A token issued at `issuedAt`.
    public func token(issuedAt: Date = Date()) async throws -> String {
        let claims = ProviderClaims(iss: IssuerClaim(value: teamId), iat: IssuedAtClaim(value: issuedAt))
        return try await keys.sign(claims, kid: JWKIdentifier(string: keyId))
    }

    /// The public key of a `.p8` private key, PEM: what `POST /v1/apps/{bundleId}/keys` keeps.
    public static func publicKey(ofP8 pem: String) throws -> String {
        try ES256PrivateKey(pem: pem).publicKey.pemRepresentation
    }

    /// Refuses text that is not a P-256 public key in PEM.
    public static func checkPublicKey(_ pem: String) throws {
        _ = try ES256PublicKey(pem: pem)
    }
}

/// A provider token signed once and reused, as Apple asks: signed again only when it is
/// `refreshAge` old (50 minutes: within Apple's 20 to 60), or when asked to after a refusal.
/// Signing a new token per request gets `429 TooManyProviderTokenUpdates` from Apple.
public final class ReusedProviderToken: Sendable {
    /// How old a token may get before it is signed again.
    public static let refreshAge: TimeInterval = 50 * 60

    public let signer: ProviderTokenSigner
    private let current = Mutex<(token: String, issuedAt: Date)?>(nil)

    public init(_ signer: ProviderTokenSigner) {
        self.signer = signer
    }

    /// The current token; a new one when it is `refreshAge` old, or when `forceRefresh` (Apple
    /// refused the current one).
    public func token(now: Date = Date(), forceRefresh: Bool = false) async throws -> String {
        if !forceRefresh, let (token, issuedAt) = current.withLock({ $0 }), now.timeIntervalSince(issuedAt) < Self.refreshAge,
            issuedAt <= now
        {
            return token
        }
        let token = try await signer.token(issuedAt: now)
        current.withLock { $0 = (token, now) }
        return token
    }
}
