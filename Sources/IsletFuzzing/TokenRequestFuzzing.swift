import Foundation
import IsletCore
import IsletFCM

extension FuzzTarget {
    /// A `POST /token` body on the push port, read as Islet playing Google reads it: the form
    /// (`FormBody`, which never traps whatever the bytes), the JWT-bearer grant
    /// (`TokenRequest`) and its assertion (`AssertionVerifier`, with the fuzz account issued).
    /// A refusal is OAuth's: 400 with `invalid_request`, `unsupported_grant_type`,
    /// `invalid_grant` or `invalid_scope`, or 401 with `invalid_client`, and a description;
    /// a form read is read the same again from its encoding; an accepted assertion speaks for the
    /// fuzz account, lives an hour at most and asks for FCM's scope.
    public static let tokenRequest = FuzzTarget(name: "token-request") { data throws(FuzzFailure) in
        if let form = try? FormBody(data) {
            let again = Result { () throws(FormBody.Failure) in try FormBody(Array(form.encoded.utf8)) }
            try expect(again == .success(form), "the form \(form.pairs) reads back from \(form.encoded.debugDescription) as \(again)")
        }
        let request: TokenRequest
        do throws(OAuthRefusal) {
            request = try TokenRequest(body: data)
        } catch {
            try expect(error.status == 400 && ["invalid_request", "unsupported_grant_type"].contains(error.error), "refused with \(error)")
            try expect(!error.description.isEmpty, "refused without a description")
            return
        }
        try expect(!request.assertion.isEmpty, "accepted an empty assertion")
        try expect((try? TokenRequest(body: Array(request.body.utf8))) == request, "the request does not read back from \(request.body)")
        let outcome = blocking { await TokenRequests.verify(request.assertion) }
        switch outcome {
        case .success(let verified):
            try expect(verified.account == TokenRequests.issued, "accepted an assertion of \(verified.account)")
            try expect(verified.expiresAt > TokenRequests.now, "accepted an assertion that expired at \(verified.expiresAt)")
            try expect(
                verified.scopes.contains(FCMScope.messaging) || verified.scopes.contains(FCMScope.cloudPlatform),
                "accepted the scopes \(verified.scopes)"
            )
        case .failure(let refusal):
            let errors = refusal.status == 401 ? ["invalid_client"] : ["invalid_grant", "invalid_scope"]
            try expect([400, 401].contains(refusal.status) && errors.contains(refusal.error), "an assertion refused with \(refusal)")
        }
    }
}

/// The service account the `token-request` target issued, and assertions made with it
/// (docs/fuzzing.md says how to make new seeds: `TokenRequests.body(issuedAt:)`).
public enum TokenRequests {
    /// The verifier's clock: seeds are issued near it, so they stay valid.
    public static let now = Date(timeIntervalSince1970: 1_750_000_000)
    /// The token endpoint the fuzz account's assertions are addressed to.
    public static let audience = "https://127.0.0.1:2197/token"

    /// A fixed RSA key, made for this target: it signs nothing outside the fuzz targets.
    static let privateKey = """
        -----BEGIN PRIVATE KEY-----
        MIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQCvdpFcH1KXVp8s
        OuOUyjSYBUAW+InEB5EG6z1HcniqBU5tpix0aaPaBFLq0Y9bPApUvKwRx+NGpYIz
        Kbw2MqEAD0fyyaA53ujWcm3XRGDSEeEGp0wDVC40ehsFwnZnKM29h89YVlDQmwl5
        Yh4oeETe5ldxpMMqXO+L/Pj8gazKPMSx/CyfgiIipdMpKB4e9QBryfhWrzR04Kp4
        nW+b7IX5cemnIq5aqD8IgmuPi3GvgHikMZY/EWgCyh6Iw2bRG9IPHJTzrrH3Srnb
        9qTvam3Sv4ebWqYpDkZjr9IV6H6/XGS9hD42HOdHK6imdibAvEZGxyqntmfmv+CJ
        /vYSWjxLAgMBAAECggEAIObJ0Q1qjkhG5qNQQ3k7LXpmjyghpSmKD1MTFY+ogrEm
        CLeNRHL+r4X6CmArUn9KrKMIXPkva/LjHDbqPPt3Zyx2YFdgfRmIbZXddO00fo+t
        s3KxdTpWw65V3NmfHC7xjWWnAriExOkdeK5mW05aE7X7larAkfQFUymngqnKPc2h
        ojBpi7Gh48M0bsE+2ccYg7LyzMCnkNbIYUc96x6b+e/s8JGJn55Dj9fdehDM5fRE
        LMdCi0peG0G9WYYRWTVa4CLe8MNFFmXiVa+oMPwjQt+YPA+PCB4RV02QL+lPnv3L
        dqUAFmeq7PypkBgbaahIFuO4zRVC43uVmTYQUPZUKQKBgQDjZRyYk0SH7MuYTSgp
        UNBsPj4N7OP8mo5JuTpnTD+eLt+FAZxMtAQLMLfFnuqwXEkvQhoemjPEwIJ+x3CL
        EklrtlWr9YtIU9xUUa+ALzfw/2dQ31uulGMaF+sWKjUQAQ0f/5N4jsVA15DDLHDQ
        R4HpV2/uJx7r4gVvpL4PPEai3QKBgQDFiRNptzkXMSR9mtMH2En8gc0GZXjiiXeJ
        eOEvTO97OetDc5TgUyvgDkyRhsF7gKV2Zj+6azSkqZZK4a/1J3x3sHZvl/Rran+7
        8BpmVhLxgNqzcJGkCCLnWzpBhmLi6kbNKMFoEcwSPzNvXcevuKABgFU43F/n/oK2
        9OJgqLvFRwKBgQCwhoHYgBqnWlAC/4K58B6cqQULUmb6ZhEncj/AiRSp+8FRQ5rO
        gMDS3xMKuv99wWae5TXZo+OkTb4AJVtc2ulcUMPZJljl4RQd8PvJCt7mm57czUgj
        EtaMHx1Eq6ddsTM7L/CPmmXOnImougsp5RkYx+QAgSYj/+YwcTeKJETBkQKBgE/Y
        v9Mcr+QTBjgLbEAgio+Z/EEYpUuU24/jH8sZ4zfBSrriLoyasgKIZSTx/qWoc7mv
        TRVSnl3s+wZbwd9rzaEn4EfteWwuCWHzhQhWxKOAPWcJGqXecBVqx9qSssgcgPAP
        CFbD0uSRTX43vy7lhy/0Kv6n/dBuDXJc/GCr8/KjAoGBANwFwiOBNg8b1tWFeoj4
        ima80hD8RHlrZNBvccNfbWp4N3PjAjDkScCFFS983efz8t0AbJPpnaPfgeDoYypu
        N+SeYbg2Pwws+cjZKUerZhe7KJHpyT1d9yttGzcfjgVjQx4EUeCf7xx845ScocHH
        q2M0u3XPfHkUcHnSSKWdYRXI
        -----END PRIVATE KEY-----
        """

    /// The account, as `islet fcm service-account` writes one.
    public static let account = try! JSONDecoder().decode(ServiceAccount.self, from: JSONSerialization.data(withJSONObject: [
        "type": "service_account", "project_id": "islet-fuzz", "private_key_id": "fuzzkey0000000000000000000000000000000001",
        "private_key": privateKey, "client_email": "fuzz@islet-fuzz.iam.gserviceaccount.com", "token_uri": audience,
    ]))
    static let issued = try! IssuedAccount(account)

    /// A token request's body, signed with the fuzz account's key, as Google's libraries send it.
    public static func body(issuedAt: Date, scope: String = FCMScope.messaging) async throws -> String {
        let assertion = try await ServiceAccountSigner(account).assertion(issuedAt: issuedAt, scope: scope)
        return TokenRequest(assertion: assertion).body
    }

    /// The fuzz target's verification of an assertion: with the fuzz account issued, at `now`.
    public static func verify(_ assertion: String) async -> Result<VerifiedAssertion, OAuthRefusal> {
        do throws(OAuthRefusal) {
            return .success(try await AssertionVerifier(accounts: [issued]).verify(assertion, audience: audience, now: now))
        } catch {
            return .failure(error)
        }
    }
}
