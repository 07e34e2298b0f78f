import Foundation
import IsletCore
@testable import IsletEngine
import IsletTestSupport
import Testing

/// docs/installations.md, "Seeing them from the backend": an activity's "why isn't it showing"
/// answer names what the installation that is its phone has not reported, or no longer has.
@Suite("Client keys and installations: the status answer", .hangDetector)
struct InstallationStatusTests {
    @Test func theStatusNamesAnInstallationsMissingAndRetiredTokens() async throws {
        try await withIslet { islet in
            let installed = try await InstallationRouteTests.installed(islet)
            // The app delivers (to a port where nothing answers): a start with a token goes to the phone.
            _ = try await islet.request(.PUT, "/v1/apps/\(InstallationRouteTests.app)/delivery", key: islet.admin, body: ConsoleRouteTests.credential)
            func start() async throws -> String {
                let started = try await islet.request(
                    .POST, "/v1/activities", key: installed.appKey,
                    body: #"{"attributesType": "RideAttributes", "attributes": {}, "content": {"state": {}}, "device": "\#(installed.id)"}"#
                )
                #expect(started.status == 201, "\(started.json)")
                return try #require(started.json["id"]?.stringValue)
            }
            func summary(_ id: String) async throws -> [String] {
                let status = try await islet.request(.GET, "/v1/activities/\(id)/status", key: installed.appKey)
                return status.json["summary"]?.arrayValue?.compactMap(\.stringValue) ?? []
            }

            // Started before the app reported a push-to-start token: the phone was never asked.
            var lines = try await summary(try await start())
            #expect(lines.contains {
                $0.hasPrefix("Installation \(installed.id) has reported no push-to-start token for RideAttributes (it registered ")
                    && $0.contains("its start was not sent to the phone")
            }, "\(lines)")
            #expect(!lines.contains { $0.hasPrefix("Shown on Islet's own displays") }, "\(lines)")

            // It reports one; the next start goes to the phone, whose update token is missing.
            let token = String(repeating: "7e", count: 32)
            let reported = try await islet.request(
                .PUT, "/v1/devices/\(installed.id)/push-to-start-tokens/RideAttributes", key: installed.credential,
                body: #"{"token": "\#(token)", "environment": "development"}"#
            )
            #expect(reported.status == 200, "\(reported.json)")
            let onThePhone = try await start()
            lines = try await summary(onThePhone)
            #expect(!lines.contains { $0.contains("push-to-start token for RideAttributes") }, "\(lines)")
            #expect(lines.contains {
                $0.hasPrefix("Installation \(installed.id) (registered ") && $0.contains("has not reported this activity's update token")
            }, "\(lines)")

            // Apple retires it (410 Unregistered): the answer says when, and that none came since.
            try await islet.engine.write { try $0.retirePhoneToken(token, reason: "Unregistered", appleTimestamp: nil) }
            lines = try await summary(onThePhone)
            #expect(lines.contains {
                $0.hasPrefix("Installation \(installed.id)'s push-to-start token for RideAttributes was retired at ")
                    && $0.contains("(Unregistered) and it has reported none since: nothing of the type starts on the phone by push")
            }, "\(lines)")
        }
    }
}
