import Foundation
import IsletCore
import IsletFCM
import IsletTestSupport
import Testing

/// Whether Google's own auth library for Python is installed (`.ci/run` installs firebase-admin,
/// which brings it, and sets ISLET_REQUIRE_PYTHON_PROVIDER: there its absence fails).
let googleAuthAvailable = pythonHas("google.oauth2.service_account", requiredBy: "ISLET_REQUIRE_PYTHON_PROVIDER")

/// Service accounts as Islet issues and reads them, the assertions they sign, and their checking
/// when Islet plays Google's token endpoint — against the rules and against Google's own library.
@Suite("FCM service accounts and access-token assertions", .hangDetector)
struct FCMServiceAccountTests {
    let tokenURI = "https://127.0.0.1:2197/token"
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func issued(_ project: String = "islet-demo") throws -> ServiceAccount {
        try ServiceAccount.issue(project: project, tokenURI: tokenURI)
    }

    func verifier(_ accounts: ServiceAccount...) throws -> AssertionVerifier {
        AssertionVerifier(accounts: try accounts.map { account throws(IsletError) in try IssuedAccount(account) })
    }

    func refusal(_ jwt: String, by verifier: AssertionVerifier, at now: Date? = nil) async -> OAuthRefusal? {
        do {
            _ = try await verifier.verify(jwt, audience: tokenURI, now: now ?? self.now)
            return nil
        } catch {
            return error
        }
    }

    // MARK: The account

    @Test func anIssuedAccountIsShapedAsGooglesAndReadsBack() throws {
        let account = try issued()
        #expect(account.privateKey.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        // Google's form: firebase-adminsdk-<5 letters or digits>@<project>.iam.gserviceaccount.com,
        // a new one for each account (two accounts of one project are two addresses).
        #expect(account.clientEmail.wholeMatch(of: /firebase-adminsdk-[a-z0-9]{5}@islet-demo\.iam\.gserviceaccount\.com/) != nil, "\(account.clientEmail)")
        #expect(try issued().clientEmail != account.clientEmail)
        #expect(account.privateKeyId.count == 40)
        let json = try JSONEncoder().encode(account)
        let object = try #require(try JSONSerialization.jsonObject(with: json) as? [String: String])
        #expect(Set(object.keys).isSuperset(of: ["type", "project_id", "private_key_id", "private_key", "client_email", "token_uri"]))
        #expect(try ServiceAccount.read(json) == account)
    }

    @Test func aBadAccountIsRefusedNamingTheField() throws {
        let good = try JSONSerialization.jsonObject(with: try JSONEncoder().encode(try issued())) as! [String: String]
        let cases: [(String, String?, String)] = [
            ("type", "authorized_user", "serviceAccount.type must be \"service_account\""),
            ("project_id", "Islet_Demo", "serviceAccount.project_id must be a Google project id"),
            ("project_id", "abc", "serviceAccount.project_id"),
            ("private_key_id", "", "serviceAccount.private_key_id"),
            ("private_key", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", "serviceAccount.private_key must be the account's RSA private key"),
            ("client_email", "nobody", "serviceAccount.client_email"),
            ("token_uri", "http://127.0.0.1/token", "serviceAccount.token_uri must be an https address"),
            ("token_uri", "https://127.0.0.1:99999/token", "serviceAccount.token_uri: "),
            ("token_uri", "https://user@evil.example/token", "serviceAccount.token_uri: "),
            ("token_uri", "https://oauth2.googleapis.com/token?x=1", "serviceAccount.token_uri's path must be plain"),
            ("client_email", nil, "client_email is missing"),
        ]
        for (field, value, message) in cases {
            var object = good
            object[field] = value
            let error = #expect(throws: IsletError.self) { try ServiceAccount.read(try JSONSerialization.data(withJSONObject: object)) }
            #expect(error?.message.contains(message) == true, "\(field)=\(value ?? "nil"): \(error?.message ?? "accepted")")
        }
        #expect(throws: IsletError.self) { try ServiceAccount.read(Data("not json".utf8)) }
        let huge = #expect(throws: IsletError.self) { try ServiceAccount.read(Data(repeating: 0x20, count: ServiceAccount.maximumSize + 1)) }
        #expect(huge?.reason == .payloadTooLarge)
    }

    @Test func aProjectIdFollowsGooglesRule() {
        for good in ["islet-demo", "a12345", "my-project-123456789012345678"] { #expect(ServiceAccount.isProjectId(good), "\(good)") }
        for bad in ["", "abcde", "1islet", "islet-", "Islet-demo", "islet_demo", "islet demo", String(repeating: "a", count: 31)] {
            #expect(!ServiceAccount.isProjectId(bad), "\(bad)")
        }
        #expect(throws: IsletError.self) { try ServiceAccount.issue(project: "../etc", tokenURI: tokenURI) }
    }

    // MARK: The assertion

    @Test func anAssertionIsAcceptedForItsAccountAndScopes() async throws {
        let account = try issued()
        let jwt = try await ServiceAccountSigner(account).assertion(issuedAt: now.addingTimeInterval(0.7))
        let verified = try await verifier(account, try issued("other-project")).verify(jwt, audience: tokenURI, now: now.addingTimeInterval(10))
        #expect(verified.account.clientEmail == account.clientEmail)
        #expect(verified.account.projectId == "islet-demo")
        #expect(verified.scopes == [FCMScope.messaging])
        #expect(verified.expiresAt == now.addingTimeInterval(3600), "iat in whole seconds, exp an hour later")
    }

    @Test func anAssertionIsRefusedAsGooglesTokenEndpointWouldRefuseIt() async throws {
        let account = try issued()
        let other = try issued("other-project")
        let signer = try await ServiceAccountSigner(account)
        let good = try await signer.assertion(issuedAt: now)
        let verifier = try verifier(account, other)

        // Signed by a key this server did not issue, under a kid it knows: the signature fails.
        var impostor = other
        impostor.privateKeyId = account.privateKeyId
        let forged = try await ServiceAccountSigner(impostor).assertion(issuedAt: now)
        #expect(await refusal(forged, by: verifier) == OAuthRefusal("invalid_grant", "Invalid JWT Signature."))
        // A byte of the signature changed.
        var tampered = good
        tampered.replaceSubrange(tampered.index(tampered.endIndex, offsetBy: -5)..., with: tampered.hasSuffix("AAAAA") ? "BBBBB" : "AAAAA")
        #expect(await refusal(tampered, by: verifier)?.description == "Invalid JWT Signature.")
        // A key no account of this server has.
        #expect(await refusal(good, by: try self.verifier(other))?.error == "invalid_client")
        #expect(await refusal(good, by: try self.verifier(other))?.status == 401)
        // Expired, and issued too far ahead.
        #expect(await refusal(good, by: verifier, at: now.addingTimeInterval(3601))?.error == "invalid_grant")
        let ahead = try await signer.assertion(issuedAt: now.addingTimeInterval(AssertionVerifier.allowedSkew + 60))
        #expect(await refusal(ahead, by: verifier)?.description.contains("Check your iat and exp") == true)
        // Another audience is refused; Google's is taken, as Google's own libraries always name it.
        var elsewhere = account
        elsewhere.tokenUri = "https://token.example.com/token"
        let toElsewhere = try await ServiceAccountSigner(elsewhere).assertion(issuedAt: now)
        #expect(await refusal(toElsewhere, by: verifier)?.description.contains("aud must be this token endpoint") == true)
        elsewhere.tokenUri = ServiceAccount.googleTokenURI
        #expect(await refusal(try await ServiceAccountSigner(elsewhere).assertion(issuedAt: now), by: verifier) == nil)
        // A scope that is not FCM's.
        let calendar = try await signer.assertion(issuedAt: now, scope: "https://www.googleapis.com/auth/calendar")
        #expect(await refusal(calendar, by: verifier)?.error == "invalid_scope")
        let both = try await signer.assertion(issuedAt: now, scope: "https://www.googleapis.com/auth/calendar \(FCMScope.cloudPlatform)")
        #expect(await refusal(both, by: verifier) == nil)
        // Not a JWT at all, and an unsigned one.
        #expect(await refusal("not-a-jwt", by: verifier)?.error == "invalid_grant")
        let header = Data(#"{"alg":"none","kid":"\#(account.privateKeyId)"}"#.utf8).base64EncodedString()
        let parts = good.split(separator: ".")
        #expect(await refusal("\(header).\(parts[1]).", by: verifier)?.error == "invalid_grant")
    }

    // MARK: Against Google's own library

    /// Google's auth library loads an account Islet issued and makes its own assertion, which
    /// Islet accepts; and it accepts the assertion Islet signs.
    @Test(.enabled(if: googleAuthAvailable, "needs Python's google-auth: pip install firebase-admin (.ci/run installs it)"))
    func googlesLibraryAndIsletAgreeOnAssertions() async throws {
        let account = try issued()
        let json = String(decoding: try JSONEncoder().encode(account), as: UTF8.self)
        let ours = try await ServiceAccountSigner(account).assertion(issuedAt: Date())
        let script = """
            import json, sys
            from google.oauth2 import service_account
            from google.auth import jwt
            info = json.loads(sys.stdin.read())
            credentials = service_account.Credentials.from_service_account_info(
                info["account"], scopes=["https://www.googleapis.com/auth/firebase.messaging"])
            assertion = credentials._make_authorization_grant_assertion()
            print(assertion.decode() if isinstance(assertion, bytes) else assertion)
            claims = jwt.decode(info["ours"], certs=info["publicKey"], audience=info["account"]["token_uri"])
            print(claims["iss"])
            """
        let input = #"{"account": \#(json), "ours": "\#(ours)", "publicKey": \#(String(decoding: try JSONEncoder().encode(try account.publicKey()), as: UTF8.self))}"#
        let run = try await runProgram(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", script], input: Data(input.utf8), timeout: 60)
        #expect(run.status == 0, "\(run.stderr)")
        let lines = run.stdout.split(separator: "\n").map(String.init)
        try #require(lines.count == 2, "\(run.stdout)\(run.stderr)")
        // Google's assertion, checked as Islet's token endpoint will.
        let verified = try await verifier(account).verify(lines[0], audience: tokenURI, now: Date())
        #expect(verified.account.clientEmail == account.clientEmail)
        #expect(verified.scopes == [FCMScope.messaging])
        // Ours, checked by Google's library.
        #expect(lines[1] == account.clientEmail)
    }
}
