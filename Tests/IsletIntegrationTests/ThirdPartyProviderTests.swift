import AsyncHTTPClient
import Crypto
import Foundation
import IsletClient
import IsletCore
import IsletTestSupport
import Testing

/// Whether Python's aioapns is installed (`.ci/run` installs it and sets
/// ISLET_REQUIRE_PYTHON_PROVIDER, making its absence a failure rather than a skip).
let aioapnsAvailable = pythonHas("aioapns", requiredBy: "ISLET_REQUIRE_PYTHON_PROVIDER")

extension DurabilityTests {
    @Test(.enabled(if: aioapnsAvailable, "needs Python's aioapns: pip install aioapns==4.0 (.ci/run installs it)"))
    func aProviderNoOneHereWroteWorksUnchangedButForItsHost() async throws {
        try await withHTTPClient { http in
            let served = try await ServedApp("com.example.pizza", http: http)
            let (data, server, client) = (served.data, served.server, served.client)
            // The provider's key, as Apple would issue it: a .p8 file.
            let key = P256.Signing.PrivateKey()
            let keyFile = data.url.appendingPathComponent("AuthKey_PIZZA12345.p8")
            try key.pemRepresentation.write(to: keyFile, atomically: true, encoding: .utf8)
            _ = try await client.addProviderKey(
                bundleId: "com.example.pizza", keyId: "PIZZA12345", teamId: "TEAMPIZZA1", publicKey: key.publicKey.pemRepresentation
            )
            let startToken = try #require(try await client.settings(device: "default").first?.pushToStartToken)
            let now = Int(Date().timeIntervalSince1970)

            // Push-to-start, asking for an update token.
            var results = try await runProvider(server: server, data: data, keyFile: keyFile, pushes: [
                (startToken, #"{"aps":{"event":"start","timestamp":\#(now),"attributes-type":"PizzaAttributes","attributes":{"order":"7"},"content-state":{"status":"baking"},"alert":{"title":"Pizza","body":"In the oven"},"input-push-token":1}}"#),
            ])
            #expect(results.map(\.status) == ["200"])
            let activity = try #require(try await client.activities().first)
            #expect(activity.content.state == ["status": "baking"])
            let token = try #require(activity.pushToken)

            // Update, an error Apple would give, an update the device drops, and the end.
            results = try await runProvider(server: server, data: data, keyFile: keyFile, pushes: [
                (token, #"{"aps":{"event":"update","timestamp":\#(now + 1),"content-state":{"status":"on its way"}}}"#),
                (String(repeating: "0", count: 64), #"{"aps":{"event":"update","timestamp":\#(now + 2),"content-state":{}}}"#),
                (token, #"{"aps":{"event":"update","timestamp":\#(now - 100),"content-state":{"status":"stale news"}}}"#),
                (token, #"{"aps":{"event":"end","timestamp":\#(now + 3),"content-state":{"status":"delivered"},"dismissal-date":\#(now - 10)}}"#),
                (token, #"{"aps":{"event":"update","timestamp":\#(now + 4),"content-state":{"status":"too late"}}}"#),
            ])
            #expect(results.map(\.status) == ["200", "400", "200", "200", "410"])
            #expect(results[1].description == "BadDeviceToken")
            #expect(results[4].description == "Unregistered")
            #expect(results[4].timestamp != nil)
            let history = try await client.history(activity.id)
            #expect(history.filter { $0.type == .contentUpdated }.compactMap { $0.data["content"]?["state"]?["status"]?.stringValue }
                == ["on its way", "delivered"])
            #expect(history.contains { $0.type == .updateIgnored && $0.data["reason"] == "olderTimestamp" })
            #expect(try await client.activity(activity.id).state == .dismissed)
            await server.stop(signal: SIGTERM)
        }
    }
}

struct ProviderResult: Decodable {
    var status: String
    var description: String?
    var timestamp: Int64?
}

/// Runs the aioapns provider against the server's APNs endpoint.
func runProvider(
    server: ServerProcess, data: DataDirectory, keyFile: URL, pushes: [(token: String, payload: String)]
) async throws -> [ProviderResult] {
    let plan: [String: Any] = [
        "host": "127.0.0.1", "port": server.apnsPort!, "ca": data.url.appendingPathComponent("tls/ca.pem").path,
        "keyFile": keyFile.path, "keyId": "PIZZA12345", "teamId": "TEAMPIZZA1",
        "topic": "com.example.pizza.push-type.liveactivity",
        "pushes": try pushes.map { push in
            ["token": push.token, "payload": try JSONSerialization.jsonObject(with: Data(push.payload.utf8))]
        },
    ]
    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Providers/aioapns_provider.py")
    let (_, stdout, stderr) = try await runPython(script, input: try JSONSerialization.data(withJSONObject: plan), timeout: 60)
    let lines = stdout.split(separator: "\n")
    #expect(lines.count == pushes.count, "aioapns printed \(lines.count) results; its errors: \(stderr)")
    // aioapns logs each refusal as "Status of notification … is 400 (BadDeviceToken)"; anything
    // else — a traceback over a frame it did not expect, a dropped connection — is a failure.
    let complaints = stderr.split(separator: "\n").filter { !$0.hasPrefix("Status of notification ") }
    #expect(complaints.isEmpty, "aioapns complained: \(stderr)")
    return try lines.map { try JSONDecoder().decode(ProviderResult.self, from: Data($0.utf8)) }
}
