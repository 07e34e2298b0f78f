import Crypto
import Foundation
import IsletCore
import IsletEngine
import IsletTestSupport
import NIOHTTP1
import Testing

/// docs/installations.md: what a client key may do (register installations, nothing else), what
/// an installation's credential may do (its own tokens and states, nothing else), and the limits
/// a hostile holder of a client key meets.
@Suite("Client keys and installations", .hangDetector)
struct InstallationRouteTests {
    static let app = "com.example.rides"

    /// An app, its key, a client key and one registered installation.
    struct Installed {
        let appKey: String
        let clientKey: String
        let installation: JSONValue
        let credential: String
        var id: String { installation["id"]?.stringValue ?? "" }
    }

    static func installed(_ islet: Harness, platform: String = "ios", extra: String = "") async throws -> Installed {
        let appKey = try await islet.createApp(app)
        let made = try await islet.request(.POST, "/v1/apps/\(app)/client-keys", key: appKey, body: #"{"name": "iOS"}"#)
        #expect(made.status == 201, "\(made.json)")
        let clientKey = try #require(made.json["key"]?.stringValue)
        #expect(clientKey.hasPrefix("pk_"))
        let registered = try await islet.request(
            .POST, "/v1/installations", key: clientKey, body: #"{"bundleId": "\#(app)", "platform": "\#(platform)"\#(extra)}"#
        )
        #expect(registered.status == 201, "\(registered.json)")
        return Installed(
            appKey: appKey, clientKey: clientKey, installation: registered.json["installation"] ?? .null,
            credential: try #require(registered.json["credential"]?.stringValue)
        )
    }

    @Test func aClientKeyRegistersAnInstallationAndDoesNothingElse() async throws {
        try await withIslet { islet in
            let installed = try await Self.installed(islet)
            #expect(installed.id.hasPrefix("inst_") && installed.credential.hasPrefix("islet_inst_"))
            #expect(installed.installation["environment"] == "production" && installed.installation["platform"] == "ios")
            let ride = try await islet.start(key: installed.appKey)
            // Everything else is refused to the client key, the same way.
            for (method, path, body) in [
                (.GET, "/v1/activities", nil), (.POST, "/v1/activities", #"{"attributesType":"R","content":{"state":{}}}"#),
                (.GET, "/v1/activities/\(ride.id)", nil), (.POST, "/v1/activities/\(ride.id)/update", #"{"content":{"state":{}}}"#),
                (.POST, "/v1/activities/\(ride.id)/end", "{}"), (.GET, "/v1/apps/\(Self.app)", nil), (.GET, "/v1/installations", nil),
                (.PUT, "/v1/devices/\(installed.id)/push-to-start-tokens/RideAttributes", #"{"token":"\#(String(repeating: "ab", count: 32))","environment":"production"}"#),
                (.GET, "/v1/events?since=0", nil), (.POST, "/v1/apps/\(Self.app)/client-keys", "{}"),
            ] as [(HTTPMethod, String, String?)] {
                let refused = try await islet.request(method, path, key: installed.clientKey, body: body)
                #expect(refused.status == 403 && refused.reason == "forbidden", "\(method) \(path): \(refused.status) \(refused.json)")
            }
        }
    }

    @Test func anInstallationReportsItsOwnTokensAndNothingElse() async throws {
        try await withIslet { islet in
            let installed = try await Self.installed(islet)
            let token = String(repeating: "5a1b", count: 16)
            // Its own push-to-start token.
            let reported = try await islet.request(
                .PUT, "/v1/devices/\(installed.id)/push-to-start-tokens/RideAttributes", key: installed.credential,
                body: #"{"token": "\#(token)", "environment": "production"}"#
            )
            #expect(reported.status == 200 && reported.json["deviceId"]?.stringValue == installed.id, "\(reported.json)")
            // Another device's is not found, as one that does not exist.
            for device in ["default", "nothing-here"] {
                let other = try await islet.request(
                    .PUT, "/v1/devices/\(device)/push-to-start-tokens/RideAttributes", key: installed.credential,
                    body: #"{"token": "\#(String(repeating: "cd", count: 32))", "environment": "production"}"#
                )
                #expect(other.status == 404 && other.reason == "deviceNotFound", "\(device): \(other.json)")
            }
            // An activity on its device takes its update token; one on another device is not
            // found, and its answer names no device.
            let own = try await islet.start(key: installed.appKey, extra: #","device":"\#(installed.id)""#)
            let elsewhere = try await islet.start(key: installed.appKey)
            let updateToken = String(repeating: "7e", count: 32)
            let taken = try await islet.request(
                .PUT, "/v1/activities/\(own.id)/push-token", key: installed.credential, body: #"{"token": "\#(updateToken)", "device": "\#(installed.id)"}"#
            )
            #expect(taken.status == 200 && taken.json["activityId"]?.stringValue == own.id, "\(taken.json)")
            for id in [elsewhere.id, String(own.id.prefix(8)), "00000000-0000-0000-0000-000000000000"] {
                let refused = try await islet.request(
                    .PUT, "/v1/activities/\(id)/push-token", key: installed.credential, body: #"{"token": "\#(updateToken)", "device": "\#(installed.id)"}"#
                )
                #expect(refused.status == 404 && refused.reason == "activityNotFound" && !refused.text.contains("default"), "\(id): \(refused.json)")
            }
            // It says its own activity was dismissed on the phone; another's is not found.
            let dismissed = try await islet.request(.POST, "/v1/activities/\(own.id)/phone-report", key: installed.credential, body: #"{"state": "dismissed"}"#)
            #expect(dismissed.status < 300, "\(dismissed.json)")
            let notOwn = try await islet.request(.POST, "/v1/activities/\(elsewhere.id)/phone-report", key: installed.credential, body: #"{"state": "ended"}"#)
            #expect(notOwn.status == 404 && notOwn.reason == "activityNotFound")
            // It reads itself, and its own settings; never an activity, its events, or another app.
            let itself = try await islet.request(.GET, "/v1/installations/self", key: installed.credential)
            #expect(itself.status == 200 && itself.json["tokens"]?.arrayValue?.count == 2, "\(itself.json)")
            let settings = try await islet.request(.GET, "/v1/devices/\(installed.id)/settings", key: installed.credential)
            #expect(settings.status == 200 && settings.json["settings"]?.arrayValue?.map { $0["bundleId"] } == [.string(Self.app)], "\(settings.json)")
            for (method, path, body) in [
                (.GET, "/v1/activities/\(own.id)", nil), (.GET, "/v1/activities", nil), (.POST, "/v1/activities/\(own.id)/update", #"{"content":{"state":{}}}"#),
                (.POST, "/v1/activities/\(own.id)/end", "{}"), (.GET, "/v1/activities/\(own.id)/events", nil), (.GET, "/v1/events?since=0", nil),
                (.GET, "/v1/installations", nil), (.POST, "/v1/installations", #"{"bundleId":"\#(Self.app)","platform":"ios"}"#),
                (.POST, "/v1/activities/\(own.id)/dismiss", nil), (.GET, "/v1/devices/\(installed.id)", nil),
            ] as [(HTTPMethod, String, String?)] {
                let refused = try await islet.request(method, path, key: installed.credential, body: body)
                #expect([403, 404].contains(refused.status) && refused.status < 500, "\(method) \(path): \(refused.status) \(refused.json)")
                #expect(!refused.text.contains("\"content\""), "\(method) \(path) answered content: \(refused.text.prefix(200))")
            }
            // The backend sees what it reported.
            let listed = try await islet.request(.GET, "/v1/installations", key: installed.appKey)
            let report = try #require(listed.json["installations"]?.arrayValue?.first)
            #expect(report["installation"]?["id"]?.stringValue == installed.id && report["tokens"]?.arrayValue?.count == 2)
        }
    }

    @Test func aUserIdIsTakenOnlyWithTheBackendsSignature() async throws {
        try await withIslet { islet in
            let installed = try await Self.installed(islet)
            let register = { (extra: String) in
                try await islet.request(.POST, "/v1/installations", key: installed.clientKey, body: #"{"bundleId": "\#(Self.app)", "platform": "ios"\#(extra)}"#)
            }
            // No secret yet: no user id from a client.
            let noSecret = try await register(#", "userId": "u-1042", "userIdSignature": "\#(String(repeating: "0", count: 64))""#)
            #expect(noSecret.status == 403 && noSecret.reason == "userNotVerified", "\(noSecret.json)")
            let made = try await islet.request(.POST, "/v1/apps/\(Self.app)/user-verification-secret", key: installed.appKey)
            let secret = try #require(made.json["secret"]?.stringValue)
            func signature(_ userId: String) -> String {
                Array(HMAC<SHA256>.authenticationCode(for: Data(userId.utf8), using: SymmetricKey(data: Data(secret.utf8)))).hexEncoded
            }
            for (extra, why) in [
                (#", "userId": "u-1042""#, "no signature"), (#", "userId": "u-1042", "userIdSignature": "\#(signature("u-1043"))""#, "another user's"),
                (#", "userId": "u-1042", "userIdSignature": "\#(String(repeating: "ab", count: 32))""#, "made up"),
            ] {
                let refused = try await register(extra)
                #expect(refused.status == 403 && refused.reason == "userNotVerified", "\(why): \(refused.json)")
            }
            let signed = try await register(#", "userId": "u-1042", "userIdSignature": "\#(signature("u-1042").uppercased())", "tags": {"city": "amsterdam"}"#)
            #expect(signed.status == 201 && signed.json["installation"]?["userId"] == "u-1042", "\(signed.json)")
            let device = try #require(signed.json["installation"]?["id"]?.stringValue)
            let user = try await islet.request(.GET, "/v1/apps/\(Self.app)/users/u-1042", key: installed.appKey)
            #expect(user.json["devices"] == [.string(device)] && user.json["tags"]?["city"] == "amsterdam", "\(user.json)")
            // The first installation signs in later, then out: a user of its own again.
            let signIn = try await islet.request(
                .PATCH, "/v1/installations/self", key: installed.credential, body: #"{"userId": "u-1042", "userIdSignature": "\#(signature("u-1042"))"}"#
            )
            #expect(signIn.status == 200 && signIn.json["userId"] == "u-1042", "\(signIn.json)")
            let both = try await islet.request(.GET, "/v1/installations?user=u-1042", key: installed.appKey)
            #expect(both.json["installations"]?.arrayValue?.count == 2, "\(both.json)")
            let signOut = try await islet.request(.PATCH, "/v1/installations/self", key: installed.credential, body: #"{"userId": null}"#)
            #expect(signOut.status == 200 && signOut.json["userId"] == nil, "\(signOut.json)")
            let after = try await islet.request(.GET, "/v1/apps/\(Self.app)/users/u-1042", key: installed.appKey)
            #expect(after.json["devices"] == [.string(device)], "\(after.json)")
            let own = try await islet.request(.GET, "/v1/apps/\(Self.app)/users/\(installed.id)", key: installed.appKey)
            #expect(own.json["devices"] == [.string(installed.id)], "\(own.json)")
        }
    }

    @Test func anAddressRegistersTwentyAnHourAndAClientKeyRevokedRegistersNothing() async throws {
        try await withIslet { islet in
            let installed = try await Self.installed(islet)
            for _ in 2...InstallationLimits.perAddressPerHour {
                let more = try await islet.request(.POST, "/v1/installations", key: installed.clientKey, body: #"{"bundleId": "\#(Self.app)", "platform": "android"}"#)
                #expect(more.status == 201, "\(more.json)")
            }
            let over = try await islet.request(.POST, "/v1/installations", key: installed.clientKey, body: #"{"bundleId": "\#(Self.app)", "platform": "ios"}"#)
            #expect(over.status == 429 && over.reason == "rateLimited", "\(over.json)")
            // An hour later, the address may again.
            islet.clock.advance(by: 3_601)
            let later = try await islet.request(.POST, "/v1/installations", key: installed.clientKey, body: #"{"bundleId": "\#(Self.app)", "platform": "ios"}"#)
            #expect(later.status == 201, "\(later.json)")
            // Behind a proxy on this machine, the address is the one it forwards.
            let forwarded = try await islet.request(
                .POST, "/v1/installations", key: installed.clientKey, body: #"{"bundleId": "\#(Self.app)", "platform": "ios"}"#,
                headers: [("X-Forwarded-For", "203.0.113.7")]
            )
            #expect(forwarded.status == 201, "\(forwarded.json)")

            // Revoked, the key registers nothing; its installations keep working.
            let keys = try await islet.request(.GET, "/v1/apps/\(Self.app)/client-keys", key: installed.appKey)
            let keyId = try #require(keys.json["clientKeys"]?.arrayValue?.first?["id"]?.stringValue)
            #expect(keys.json["clientKeys"]?.arrayValue?.first?["installations"] == 22, "\(keys.json)")
            let revoked = try await islet.request(.DELETE, "/v1/apps/\(Self.app)/client-keys/\(keyId)", key: installed.appKey)
            #expect(revoked.status == 200 && revoked.json["installationsCut"] == 0, "\(revoked.json)")
            let refused = try await islet.request(.POST, "/v1/installations", key: installed.clientKey, body: #"{"bundleId": "\#(Self.app)", "platform": "ios"}"#)
            #expect(refused.status == 401, "\(refused.json)")
            let stillWorks = try await islet.request(.GET, "/v1/installations/self", key: installed.credential)
            #expect(stillWorks.status == 200)
            // Cut, its installations stop working too.
            let cut = try await islet.request(.DELETE, "/v1/apps/\(Self.app)/client-keys/\(keyId)?installations=cut", key: installed.appKey)
            #expect(cut.status == 200 && cut.json["installationsCut"] == 22, "\(cut.json)")
            let stopped = try await islet.request(.GET, "/v1/installations/self", key: installed.credential)
            #expect(stopped.status == 401, "\(stopped.json)")
        }
    }

    @Test func anInstallationReplacesItsCredentialAndUnregisters() async throws {
        try await withIslet { islet in
            let installed = try await Self.installed(islet)
            let replaced = try await islet.request(.POST, "/v1/installations/self/credential", key: installed.credential)
            let credential = try #require(replaced.json["credential"]?.stringValue)
            #expect(replaced.status == 201 && credential != installed.credential)
            #expect(try await islet.request(.GET, "/v1/installations/self", key: installed.credential).status == 401)
            #expect(try await islet.request(.GET, "/v1/installations/\(installed.id)", key: credential).status == 200)
            // Another installation is not found, as one that does not exist.
            let other = try await islet.request(.GET, "/v1/installations/inst_aaaaaaaaaaaaaaaaaaaaaaaaaa", key: credential)
            #expect(other.status == 404 && other.reason == "deviceNotFound")
            let token = String(repeating: "5a1b", count: 16)
            _ = try await islet.request(
                .PUT, "/v1/devices/\(installed.id)/push-to-start-tokens/RideAttributes", key: credential,
                body: #"{"token": "\#(token)", "environment": "production"}"#
            )
            let gone = try await islet.request(.DELETE, "/v1/installations/self", key: credential)
            #expect(gone.status == 204)
            #expect(try await islet.request(.GET, "/v1/installations/self", key: credential).status == 401)
            let report = try await islet.request(.GET, "/v1/installations/\(installed.id)", key: installed.appKey)
            #expect(report.status == 404, "an unregistered installation is gone: \(report.json)")
            let phone = try await islet.request(.GET, "/v1/devices/\(installed.id)", key: installed.appKey)
            #expect(phone.json["tokens"]?.arrayValue?.allSatisfy { $0["retiredReason"] == "unregistered" } == true, "\(phone.json)")
        }
    }

    /// What a hostile installation can make the server keep or read: a token replaced over and
    /// over keeps its holder's newest retired ones only (`PhoneToken.retiredKept`), and a body
    /// past 4 KB is refused before anything reads it, with an `Idempotency-Key` too (whose gate
    /// keeps bodies of megabytes). Benchmarks/attacks/client_key_abuse.py measures the rest.
    @Test func aHostileInstallationGrowsNothingAndSendsNoLargeBody() async throws {
        try await withIslet { islet in
            let installed = try await Self.installed(islet)
            for n in 0..<(PhoneToken.retiredKept + 12) {
                let replaced = try await islet.request(
                    .PUT, "/v1/devices/\(installed.id)/push-to-start-tokens/RideAttributes", key: installed.credential,
                    body: #"{"token": "\#(String(format: "%064x", n + 1))", "environment": "production"}"#
                )
                #expect(replaced.status == 200, "\(replaced.json)")
            }
            let itself = try await islet.request(.GET, "/v1/installations/self", key: installed.credential)
            let tokens = itself.json["tokens"]?.arrayValue ?? []
            #expect(tokens.count == PhoneToken.retiredKept + 1, "one current and the newest retired only: \(tokens.count)")
            #expect(tokens.filter { $0["retiredAt"] == nil || $0["retiredAt"] == .null }.map { $0["token"]?.stringValue } == [String(format: "%064x", PhoneToken.retiredKept + 12)])

            let padded = #"{"token": "\#(String(repeating: "ab", count: 32))", "environment": "production"}"# + String(repeating: " ", count: InstallationLimits.maximumBody)
            for headers in [[], [("Idempotency-Key", "k-1")]] {
                let large = try await islet.request(
                    .PUT, "/v1/devices/\(installed.id)/push-to-start-tokens/RideAttributes", key: installed.credential, body: padded, headers: headers
                )
                #expect(large.status == 413 && large.reason == "payloadTooLarge", "\(headers): \(large.json)")
                let registering = try await islet.request(.POST, "/v1/installations", key: installed.clientKey, body: padded, headers: headers)
                #expect(registering.status == 413 && registering.reason == "payloadTooLarge", "\(headers): \(registering.json)")
            }
        }
    }
}
