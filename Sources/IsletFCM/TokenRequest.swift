import IsletCore

/// The JWT-bearer grant's request (RFC 7523, `POST /token`): a form with `grant_type` and the
/// signed `assertion`. The sender writes it (`body`); Islet playing Google reads it (`init(body:)`)
/// and refuses what is not one as Google's token endpoint does, with OAuth's `error`.
public struct TokenRequest: Sendable, Equatable {
    /// The one grant type Google's token endpoint takes for a service account.
    public static let jwtBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    /// The largest body read: an assertion is about 1 KB.
    public static let maximumBody = 16 * 1024

    /// The signed assertion (`AccessTokenAssertion`), not yet checked.
    public var assertion: String

    public init(assertion: String) {
        self.assertion = assertion
    }

    /// Reads a request body.
    ///
    /// - Throws: `invalid_request` for a body that is not a form or repeats a parameter, or
    ///   lacks the assertion; `unsupported_grant_type` for any grant but the JWT-bearer one.
    public init(body: some Collection<UInt8>) throws(OAuthRefusal) {
        let grantType: String?
        let assertion: String?
        do {
            let form = try FormBody(body)
            grantType = try form.value("grant_type")
            assertion = try form.value("assertion")
        } catch {
            throw OAuthRefusal("invalid_request", error.message)
        }
        guard grantType == Self.jwtBearer else {
            throw OAuthRefusal(
                "unsupported_grant_type",
                "Invalid grant_type: \(grantType.map { String($0.prefix(100)).debugDescription } ?? "(none)"); this endpoint takes \(Self.jwtBearer)."
            )
        }
        guard let assertion, !assertion.isEmpty else {
            throw OAuthRefusal("invalid_request", "Missing required parameter: assertion")
        }
        self.assertion = assertion
    }

    /// The form a sender posts, with `Content-Type: application/x-www-form-urlencoded`.
    public var body: String {
        FormBody(pairs: [("grant_type", Self.jwtBearer), ("assertion", assertion)]).encoded
    }
}
