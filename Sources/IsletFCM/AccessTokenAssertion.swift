import Foundation
import IsletCore
import JWTKit

/// The OAuth 2.0 scopes an FCM access token is asked with.
public enum FCMScope {
    /// Sending messages.
    public static let messaging = "https://www.googleapis.com/auth/firebase.messaging"
    /// Every Google Cloud API, which FCM also takes.
    public static let cloudPlatform = "https://www.googleapis.com/auth/cloud-platform"
}

/// The claims of the JWT a service account signs to get an access token (Google's "OAuth 2.0
/// for Server to Server Applications"): who asks, for what, from which token endpoint, and
/// for how long — an hour at most.
public struct AccessTokenAssertion: JWTPayload, Equatable {
    /// The account's `client_email`.
    public var iss: IssuerClaim
    /// The scopes asked for, separated by spaces.
    public var scope: String
    /// The account's `token_uri`.
    public var aud: AudienceClaim
    public var iat: IssuedAtClaim
    public var exp: ExpirationClaim

    /// The longest an assertion may live, from `iat` to `exp`.
    public static let maximumLifetime: TimeInterval = 3600

    public init(iss: String, scope: String, aud: String, iat: Date, exp: Date) {
        self.iss = IssuerClaim(value: iss)
        self.scope = scope
        self.aud = AudienceClaim(value: aud)
        self.iat = IssuedAtClaim(value: iat)
        self.exp = ExpirationClaim(value: exp)
    }

    /// Nothing: `AssertionVerifier` checks the claims against its clock and audience, with
    /// Google's answers for each way they are wrong.
    public func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// Signs access-token assertions with a service account's key: RS256, with the key's id as `kid`.
public struct ServiceAccountSigner: Sendable {
    private let keys: JWTKeyCollection
    public let account: ServiceAccount

    public init(_ account: ServiceAccount) async throws(IsletError) {
        let key = try account.signingKey()
        keys = JWTKeyCollection()
        await keys.add(rsa: key, digestAlgorithm: .sha256, kid: JWKIdentifier(string: account.privateKeyId))
        self.account = account
    }

    /// An assertion issued at `issuedAt` (whole seconds), valid for `lifetime` seconds (an hour
    /// at most), asking for `scope`.
    public func assertion(issuedAt: Date, lifetime: TimeInterval = AccessTokenAssertion.maximumLifetime, scope: String = FCMScope.messaging)
        async throws -> String
    {
        let iat = Date(timeIntervalSince1970: issuedAt.timeIntervalSince1970.rounded(.down))
        let claims = AccessTokenAssertion(
            iss: account.clientEmail, scope: scope, aud: account.tokenUri, iat: iat,
            exp: iat.addingTimeInterval(min(lifetime, AccessTokenAssertion.maximumLifetime))
        )
        return try await keys.sign(claims, kid: JWKIdentifier(string: account.privateKeyId))
    }
}
