import Crypto
import Foundation
import IsletCore
import JWTKit
import Synchronization

/// The claims of an APNs provider token: the team that signed it and when.
struct ProviderClaims: JWTPayload {
    var iss: IssuerClaim
    var iat: IssuedAtClaim

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// What a verified provider token says.
public struct ProviderIdentity: Hashable, Sendable {
    /// The key id (`kid`) it was signed with.
    public var keyId: String
    /// The team (`iss`).
    public var teamId: String
    /// When it was issued (`iat`).
    public var issuedAt: Date
    /// The apps whose topics the key may push to.
    public var bundleIds: Set<BundleID>
}

/// Verifies `authorization: bearer <jwt>` as APNs does: ES256, a registered `kid`, the key's
/// team as `iss`, and an `iat` no older than an hour. A token that verified once is remembered
/// (providers reuse a token for up to an hour), so repeated pushes cost no signature check.
public final class ProviderTokenVerifier: Sendable {
    /// How old `iat` may be.
    public static let maxAge: TimeInterval = 3600
    /// How far ahead of the server's clock `iat` may be.
    public static let maxClockSkew: TimeInterval = 300

    /// The longest token accepted; Apple's are about 200 characters.
    public static let maxTokenLength = 4096

    /// Verified tokens by their SHA-256, and a generation that `forget()` advances so a check
    /// that raced with a key's removal is not remembered.
    private struct Cache {
        var identities: [SHA256Digest: (identity: ProviderIdentity, at: ContinuousClock.Instant)] = [:]
        var generation = 0
    }

    private let cache = Mutex(Cache())
    private let cacheLifetime: Duration?

    /// Creates a verifier.
    ///
    /// - Parameter cacheLifetime: How long a verified token is trusted without checking it
    ///   again; `nil`, until `forget()`. Nodes sharing a store do not hear of each other's key
    ///   changes, so they give it a lifetime.
    public init(cacheLifetime: Duration? = nil) {
        self.cacheLifetime = cacheLifetime
    }

    /// Forgets verified tokens: keys changed.
    public func forget() {
        cache.withLock {
            $0.identities.removeAll()
            $0.generation += 1
        }
    }

    /// Checks the `authorization` header of a push.
    ///
    /// - Parameters:
    ///   - authorization: The header's value, if any.
    ///   - now: The server's time.
    ///   - keys: Finds the registered keys with a key id.
    /// - Returns: Who signed the token.
    public func verify(
        authorization: String?, now: Date, keys: (String) async throws -> [ProviderKey]
    ) async throws -> ProviderIdentity {
        let token = try Self.bearerToken(authorization)
        let digest = SHA256.hash(data: Data(token.utf8))
        let (known, generation) = remembered(digest)
        let identity: ProviderIdentity
        if let known {
            identity = known
        } else {
            identity = try await check(token, keys: keys)
            cache.withLock { cache in
                guard cache.generation == generation else { return }
                if cache.identities.count >= 10_000 { cache.identities.removeAll() }
                cache.identities[digest] = (identity, .now)
            }
        }
        return try Self.current(identity, now: now)
    }

    /// `verify` without a key's lookup, for a token already verified and remembered: its
    /// identity, the same refusals, or `nil` when the token is not remembered (then `verify` it).
    public func verifyRemembered(authorization: String?, now: Date) throws -> ProviderIdentity? {
        let token = try Self.bearerToken(authorization)
        guard let known = remembered(SHA256.hash(data: Data(token.utf8))).identity else { return nil }
        return try Self.current(known, now: now)
    }

    /// The token of an `authorization` header, `bearer <JWT>`.
    private static func bearerToken(_ authorization: String?) throws -> String {
        guard let authorization, !authorization.isEmpty else {
            throw APNsError.missingProviderToken("Send authorization: bearer <JWT signed with your .p8 key>.")
        }
        let parts = authorization.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw APNsError.invalidProviderToken("The authorization header must be \"bearer <JWT>\".")
        }
        let token = parts[1].trimmedOfWhitespace()
        guard token.utf8.count <= Self.maxTokenLength else {
            throw APNsError.invalidProviderToken("The provider token is over \(Self.maxTokenLength) bytes.")
        }
        return token
    }

    /// The identity a token with this digest verified as, if it is remembered and not too old
    /// to trust; and the cache's generation, for remembering one.
    private func remembered(_ digest: SHA256Digest) -> (identity: ProviderIdentity?, generation: Int) {
        cache.withLock { cache -> (ProviderIdentity?, Int) in
            guard let entry = cache.identities[digest], cacheLifetime.map({ ContinuousClock.now - entry.at <= $0 }) ?? true else {
                return (nil, cache.generation)
            }
            return (entry.identity, cache.generation)
        }
    }

    /// The identity, if its token's `iat` is neither too old nor in the future.
    private static func current(_ identity: ProviderIdentity, now: Date) throws -> ProviderIdentity {
        let age = now.timeIntervalSince(identity.issuedAt)
        if age > Self.maxAge {
            throw APNsError.expiredProviderToken(
                "The token's iat is \(Self.seconds(age)) old; APNs accepts at most \(Self.seconds(Self.maxAge)). Sign a new one."
            )
        }
        if age < -Self.maxClockSkew {
            throw APNsError.invalidProviderToken("The token's iat is \(Self.seconds(-age)) in the future.")
        }
        return identity
    }

    /// A duration in words, whatever its size (`iat` is the sender's to choose).
    private static func seconds(_ interval: TimeInterval) -> String {
        interval < 1e12 ? "\(Int(interval)) s" : "over 10^12 s"
    }

    private func check(_ token: String, keys: (String) async throws -> [ProviderKey]) async throws -> ProviderIdentity {
        let header = try Self.header(of: token)
        guard header.alg == "ES256" else {
            throw APNsError.invalidProviderToken("Provider tokens are signed ES256, not \(header.alg ?? "with no alg").")
        }
        guard let kid = header.kid, !kid.isEmpty else {
            throw APNsError.invalidProviderToken("The token's header has no kid (the key id).")
        }
        let registered = try await keys(kid)
        guard !registered.isEmpty else {
            throw APNsError.invalidProviderToken("No key \(kid) is registered: POST /v1/apps/{bundleId}/keys first.")
        }
        // Several apps may have registered this key id; the token speaks only for those that
        // registered the very key that verifies it, for the team it names.
        for publicKey in Set(registered.map(\.publicKey)) {
            guard let claims = await Self.claims(of: token, verifiedWith: publicKey, kid: kid) else { continue }
            let team = claims.iss.value
            let holders = registered.filter { $0.publicKey == publicKey }
            let bundleIds = Set(holders.filter { $0.teamId == team }.map(\.bundleId))
            guard !bundleIds.isEmpty else {
                throw APNsError.invalidProviderToken("Key \(kid) belongs to team \(holders[0].teamId), but the token's iss is \(team).")
            }
            return ProviderIdentity(keyId: kid, teamId: team, issuedAt: claims.iat.value, bundleIds: bundleIds)
        }
        throw APNsError.invalidProviderToken("The token's signature does not verify with key \(kid).")
    }

    private static func claims(of token: String, verifiedWith publicKey: String, kid: String) async -> ProviderClaims? {
        guard let key = try? ES256PublicKey(pem: publicKey) else { return nil }
        let collection = JWTKeyCollection()
        await collection.add(ecdsa: key, kid: JWKIdentifier(string: kid))
        return try? await collection.verify(token, as: ProviderClaims.self)
    }

    private struct Header: Decodable {
        var alg: String?
        var kid: String?
    }

    private static func header(of token: String) throws -> Header {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let data = Base64URL.decode(String(parts[0])),
            let header = try? JSONDecoder().decode(Header.self, from: data)
        else {
            throw APNsError.invalidProviderToken("The provider token is not a JWT (header.claims.signature, base64url).")
        }
        return header
    }
}
