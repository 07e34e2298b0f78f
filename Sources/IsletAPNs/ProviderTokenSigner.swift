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

    /// A token issued at `issuedAt`, in whole seconds: Apple's `iat` is "the number of seconds
    /// since Epoch", and a fraction is not what its servers were written for (the console's
    /// APNs log showed Islet sending one).
    public func token(issuedAt: Date = Date()) async throws -> String {
        let whole = Date(timeIntervalSince1970: issuedAt.timeIntervalSince1970.rounded(.down))
        let claims = ProviderClaims(iss: IssuerClaim(value: teamId), iat: IssuedAtClaim(value: whole))
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
/// `refreshAge` old (50 minutes: within Apple's 20 to 60), or when Apple refused it. Signing a
/// new token per request gets `429 TooManyProviderTokenUpdates` from Apple.
///
/// One token at a time, however many requests ask at once: the first asks for the signing and
/// the others wait for it (concurrent signings would each carry their own `iat`, and a
/// connection that sees two is refused). A refused token is replaced once, by whichever request
/// reports it first; the others take the replacement.
public final class ReusedProviderToken: Sendable {
    /// How old a token may get before it is signed again.
    public static let refreshAge: TimeInterval = 50 * 60
    /// How far after a caller's time a token may have been issued and still be used: concurrent
    /// callers' clocks disagree by this much at most (APNs itself accepts far more skew).
    public static let allowedLead: TimeInterval = 60

    public let signer: ProviderTokenSigner

    private struct Current {
        var signing: Task<String, any Error>
        var issuedAt: Date
        /// The token, once a caller has seen it signed.
        var token: String?
    }
    private let current = Mutex<Current?>(nil)

    public init(_ signer: ProviderTokenSigner) {
        self.signer = signer
    }

    /// The current token if one is signed and still current at `now`, without waiting: a
    /// sender's batch uses it, and asks `token(now:replacing:)` only when there is none.
    public func signedToken(now: Date = Date()) -> String? {
        current.withLock { current in
            guard let held = current, let token = held.token, held.issuedAt.timeIntervalSince(now) <= Self.allowedLead,
                now.timeIntervalSince(held.issuedAt) < Self.refreshAge
            else { return nil }
            return token
        }
    }

    /// The current token; a new one when it is `refreshAge` old, or when it is `refused` (the
    /// token Apple just refused).
    public func token(now: Date = Date(), replacing refused: String? = nil) async throws -> String {
        let signer = self.signer
        let signing = current.withLock { current -> Task<String, any Error> in
            // Callers asking at once see slightly different times, in any order: a token issued
            // a little after a caller's `now` is still current for it (CI once saw a second
            // replacement signed this way, by a caller whose `now` preceded the first's).
            if let held = current, held.issuedAt.timeIntervalSince(now) <= Self.allowedLead,
                now.timeIntervalSince(held.issuedAt) < Self.refreshAge, refused == nil || held.token != refused
            {
                return held.signing
            }
            let signing = Task { try await signer.token(issuedAt: now) }
            current = Current(signing: signing, issuedAt: now)
            return signing
        }
        do {
            let token = try await signing.value
            current.withLock { if $0?.signing == signing { $0?.token = token } }
            return token
        } catch {
            // A signing that failed is not kept: the next request tries again.
            current.withLock { if $0?.signing == signing { $0 = nil } }
            throw error
        }
    }
}
