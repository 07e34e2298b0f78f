import Foundation
import IsletClient
import IsletCore
import IsletTestSupport
import Testing

/// Whether Python's firebase-admin is installed (`.ci/run` installs it and sets
/// ISLET_REQUIRE_PYTHON_PROVIDER, making its absence a failure rather than a skip).
let firebaseAdminAvailable = pythonHas("firebase_admin", requiredBy: "ISLET_REQUIRE_PYTHON_PROVIDER")

/// Firebase installation IDs (docs/android.md): an Android phone Islet plays, switched to them,
/// is reached through Google's own FCM client sending `message.fid`, unchanged but for FCM's
/// address; turned off again, the ID is `UNREGISTERED`.
@Suite("Firebase installation IDs through firebase-admin", .hangDetector)
struct InstallationIdTests {
    static let bundleId = "com.example.ride"

    @Test(.enabled(if: firebaseAdminAvailable, "needs Python's firebase-admin: pip install firebase-admin==7.7.0 (.ci/run installs it)"))
    func firebaseAdminStartsUpdatesAndEndsALiveUpdateByTheInstallationId() async throws {
        try await withHTTPClient { http in
            let data = DataDirectory()
            let server = try await ServerProcess(data: data)
            let admin = IsletClient(server: server.url, key: data.adminKey, http: http)
            let app = try await admin.createApp(bundleId: Self.bundleId)
            let phone = IsletClient(server: server.url, key: app.apiKey, http: http)
            _ = try await admin.createDevice(id: "pixel", platform: .android)
            let account = try await admin.issueServiceAccount(projectId: "islet-fid-test")

            // The app opts in: the phone's settings give its installation ID beside its token.
            let before = try #require(try await admin.settings(device: "pixel").first { $0.bundleId == Self.bundleId })
            #expect(before.fcmInstallationId == nil)
            let settings = try await admin.updateSettings(device: "pixel", bundleId: Self.bundleId, fcmInstallationIdEnabled: true)
            let fid = try #require(settings.fcmInstallationId)
            let token = try #require(settings.fcmToken)
            #expect(FCMAddress.isInstallationId(fid), "\(fid)")
            // An iPhone has none.
            _ = try await admin.createDevice(id: "iphone", platform: .ios)
            await #expect(throws: ClientError.self) {
                _ = try await admin.updateSettings(device: "iphone", bundleId: Self.bundleId, fcmInstallationIdEnabled: true)
            }

            let now = Int(Date().timeIntervalSince1970)
            var results = try await Self.send(server: server, data: data, account: account, [
                (.fid(fid), Self.islet("start", state: "booked", at: now)),
                (.fid(fid), Self.islet("update", state: "pickup", at: now + 1)),
                // A registration token where an installation ID belongs, and an ID as a token.
                (.fid(token), Self.islet("update", state: "wrong field", at: now + 2)),
                (.token(fid), Self.islet("update", state: "wrong field", at: now + 2)),
                (.fid(fid), Self.islet("end", state: "arrived", at: now + 3)),
            ])
            #expect(results.map(\.error) == [nil, nil, "InvalidArgumentError", "UnregisteredError", nil], "\(results)")
            #expect(results[0].name?.hasPrefix("projects/islet-fid-test/messages/") == true, "\(results[0])")
            let activity = try #require(try await phone.activities().first)
            #expect(activity.deviceId == "pixel" && activity.state == .ended)
            #expect(try await phone.statuses(activity.id) == ["booked", "pickup", "arrived"])

            // The app asks for a token again: the installation ID is retired, the token still works.
            let off = try await admin.updateSettings(device: "pixel", bundleId: Self.bundleId, fcmInstallationIdEnabled: false)
            #expect(off.fcmInstallationId == nil && off.fcmToken == token)
            results = try await Self.send(server: server, data: data, account: account, [
                (.fid(fid), Self.islet("start", state: "booked", at: now + 4, tag: "ride-2")),
                (.token(token), Self.islet("start", state: "booked", at: now + 5, tag: "ride-3")),
            ])
            #expect(results.map(\.error) == ["UnregisteredError", nil], "\(results)")
            #expect(try await phone.activities().count == 2)
            await server.stop(signal: SIGTERM)
        }
    }

    /// `data.islet` as an Android backend sends it: the event, the notification's tag, the state.
    static func islet(_ event: String, state status: String, at timestamp: Int, tag: String = "ride-1") -> String {
        let body: JSONValue = [
            "event": .string(event), "activityId": .string(tag), "bundleId": .string(bundleId), "attributesType": "RideAttributes",
            "attributes": ["destination": "Gare du Nord"], "contentState": ["status": .string(status)], "timestamp": .integer(Int64(timestamp)),
            "notification": ["title": "Ride to Gare du Nord", "text": .string(status)],
        ]
        return (try? WireFormat.string(body)) ?? "{}"
    }

    struct Result: Decodable {
        var name: String?
        var error: String?
        var code: String?
        var message: String?
    }

    /// Sends each message with firebase-admin (Providers/firebase_admin_provider.py), to the
    /// server's push port, with the service account it issued.
    static func send(
        server: ServerProcess, data: DataDirectory, account: JSONValue, _ messages: [(FCMAddress, String)]
    ) async throws -> [Result] {
        let plan: JSONValue = [
            "push": .string("https://127.0.0.1:\(server.apnsPort!)"), "ca": .string(data.url.appendingPathComponent("tls/ca.pem").path),
            "serviceAccount": account,
            "messages": .array(messages.map { address, islet in [address.field: .string(address.value), "islet": .string(islet)] }),
        ]
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Providers/firebase_admin_provider.py")
        let (status, stdout, stderr) = try await runPython(script, input: Data(try WireFormat.string(plan).utf8), timeout: 60)
        let lines = stdout.split(separator: "\n")
        #expect(status == 0 && lines.count == messages.count, "firebase-admin printed \(lines.count) results (exit \(status)); its errors: \(stderr)")
        return try lines.map { try JSONDecoder().decode(Result.self, from: Data($0.utf8)) }
    }
}
