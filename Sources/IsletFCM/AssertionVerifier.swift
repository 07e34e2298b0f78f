import Foundation
import IsletCore
import JWTKit

extension IssuedAccount {
    /// What Islet keeps of an account it issued.
    public init(_ account: ServiceAccount) throws(IsletError) {
        self.init(
            projectId: account.projectId, clientEmail: account.clientEmail, privateKeyId: account.privateKeyId,
            publicKey: try account.publicKey()
        )
    }
}

/// Google's refusal of a token request, as its token endpoint words it: an OAuth 2.0 `error`
/// and `error_description`, answered with 400 (401 for an unknown client).
public struct OAuthRefusal: Error, Hashable, Sendable {
    public var status: Int
    /// `invalid_grant`, `invalid_scope`, `invalid_client`, `unsupported_grant_type`, `invalid_request`.
    public var error: String
    public var description: String

    public init(status: Int = 400, _ error: String, _ description: String) {
        self.status = status
        self.error = error
        self.description = description
    }
}

/// What an accepted assertion says: the account, and the scopes it was given.
public struct VerifiedAssertion: Hashable, Sendable {
    public var account: IssuedAccount
    public var scopes: [String]
    public var expiresAt: Date
}

/// Checks the assertions of the JWT-bearer grant (`POST /token`) as Google's token endpoint
/// does: signed (RS256) by the key of an account Islet issued, named by `kid`; issued by that
/// account's `client_email`; addressed to this endpoint or to Google's (which Google's own
/// libraries name whatever `token_uri` says); living an hour at most and not
/// expired; asking for a scope FCM takes.
public struct AssertionVerifier: Sendable {
    /// How far a caller's clock may be ahead of Islet's.
    public static let allowedSkew: TimeInterval = 300

    private let accounts: [String: IssuedAccount]

    public init(accounts: [IssuedAccount]) {
        self.accounts = Dictionary(accounts.map { ($0.privateKeyId, $0) }, uniquingKeysWith: { _, last in last })
    }

    /// The assertion's account and scopes, or Google's refusal.
    ///
    /// - Parameters:
    ///   - audience: This endpoint's address, as the accounts' `token_uri` says it.
    public func verify(_ jwt: String, audience: String, now: Date) async throws(OAuthRefusal) -> VerifiedAssertion {
        guard jwt.utf8.count <= 8 * 1024, let header = Self.header(of: jwt) else {
            throw OAuthRefusal("invalid_grant", "Invalid JWT: the assertion is not a JWT.")
        }
        guard header.alg == "RS256" else {
            throw OAuthRefusal("invalid_grant", "Invalid JWT: the algorithm must be RS256.")
        }
        guard let kid = header.kid, let account = accounts[kid] else {
            throw OAuthRefusal(status: 401, "invalid_client", "The OAuth client was not found: no service account of this server has key \(header.kid ?? "(no kid)").")
        }
        let claims: AccessTokenAssertion
        do {
            let keys = JWTKeyCollection()
            await keys.add(rsa: try JWTKit.Insecure.RSA.PublicKey(pem: account.publicKey), digestAlgorithm: .sha256, kid: JWKIdentifier(string: kid))
            claims = try await keys.verify(jwt, as: AccessTokenAssertion.self)
        } catch {
            throw OAuthRefusal("invalid_grant", "Invalid JWT Signature.")
        }
        guard claims.iss.value == account.clientEmail else {
            throw OAuthRefusal("invalid_grant", "Invalid JWT: iss must be the account's client_email, \(account.clientEmail).")
        }
        // Google's own libraries name Google's endpoint whatever the account's token_uri says.
        guard claims.aud.value.contains(where: { [audience, ServiceAccount.googleTokenURI].contains($0) }) else {
            throw OAuthRefusal("invalid_grant", "Invalid JWT: aud must be this token endpoint, \(audience) (or Google's, \(ServiceAccount.googleTokenURI)).")
        }
        let (iat, exp) = (claims.iat.value, claims.exp.value)
        guard exp > iat, exp.timeIntervalSince(iat) <= AccessTokenAssertion.maximumLifetime,
            iat <= now.addingTimeInterval(Self.allowedSkew), exp > now
        else {
            throw OAuthRefusal(
                "invalid_grant",
                "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim."
            )
        }
        let scopes = claims.scope.split(separator: " ").map(String.init)
        guard scopes.contains(FCMScope.messaging) || scopes.contains(FCMScope.cloudPlatform) else {
            throw OAuthRefusal("invalid_scope", "The scope must include \(FCMScope.messaging) (or \(FCMScope.cloudPlatform)) to send FCM messages.")
        }
        return VerifiedAssertion(account: account, scopes: scopes, expiresAt: exp)
    }

    private struct Header: Decodable {
        var alg: String?
        var kid: String?
    }

    /// The JWT's header, read without checking anything else.
    private static func header(of jwt: String) -> Header? {
        guard let first = jwt.split(separator: ".", omittingEmptySubsequences: false).first, jwt.split(separator: ".").count == 3 else { return nil }
        var base64 = first.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64).flatMap { try? JSONDecoder().decode(Header.self, from: $0) }
    }
}
