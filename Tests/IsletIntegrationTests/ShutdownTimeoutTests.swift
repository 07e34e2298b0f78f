import Foundation
import IsletClient
import IsletCore
import IsletTestSupport
import Testing

extension DurabilityTests {
    /// A client that pipelines requests and never reads keeps an answer in flight for ever;
    /// graceful shutdown used to wait for it, so SIGTERM never stopped the server.
    @Test func sigtermStopsTheServerDespiteAClientThatNeverReads() async throws {
        let data = DataDirectory()
        // The write timeout is far off: the shutdown timeout is what must end this connection.
        let server = try await ServerProcess(
            data: data, environment: ["ISLET_SERVER_SHUTDOWN_TIMEOUT": "1s", "ISLET_SERVER_WRITE_TIMEOUT": "1h"]
        )
        let stalled = try RawSocket(port: server.port, receiveBuffer: 1024)
        stalled.send(Array(String(repeating: "GET /openapi.json HTTP/1.1\r\nHost: islet\r\n\r\n", count: 100).utf8))
        // The first answer has started: the connection is in flight, not idle.
        #expect(await offThePool { stalled.read(atMost: 15, seconds: 5).text } == "HTTP/1.1 200 OK")

        let started = ContinuousClock.now
        let status = await server.stop(signal: SIGTERM)
        #expect(status == 0)
        #expect(ContinuousClock.now - started < .seconds(6))
        #expect(server.output.contains("closed 1 connection still open after the shutdown timeout"))
        withExtendedLifetime(stalled) {}
    }
}

extension DurabilityTests {
    /// An FCM host that completes TLS, picks h2 and never sends its SETTINGS held the HTTP
    /// client's shutdown, and with it the process, for ever after SIGTERM (issue 58): the
    /// transport now waits for its connections to close at most `closeTimeout`.
    @Test func sigtermStopsTheServerDespiteAnFCMHostThatNeverSpeaks() async throws {
        let silent = try await SilentHTTP2Server()
        let data = DataDirectory()
        let server = try await ServerProcess(data: data, environment: ["ISLET_SERVER_SHUTDOWN_TIMEOUT": "1s"])
        try await withHTTPClient { http in
            let admin = IsletClient(server: server.url, key: data.adminKey, http: http)
            let app = try await admin.createApp(bundleId: "com.example.silent")
            let host = "https://127.0.0.1:\(silent.port)"
            let account = try await admin.issueServiceAccount(projectId: "silent-project", tokenUri: host + "/token")
            _ = try await admin.putFCMCredential(
                bundleId: "com.example.silent", FCMCredentialBody(serviceAccount: account, url: host, caCertificate: silent.authority)
            )
            _ = try await admin.createDevice(id: "pixel-silent", platform: .android)
            let client = IsletClient(server: server.url, key: app.apiKey, http: http)
            _ = try await client.registerFCMToken("silent-token:APA91b" + String(repeating: "x", count: 140), device: "pixel-silent")
            _ = try await client.start(ActivityRequest(
                attributesType: "RideAttributes", attributes: [:], content: ActivityContent(state: ["eta": 5]), deviceId: "pixel-silent"
            ))
        }
        // The sender's HTTP/2 connection is open and waits for the host's SETTINGS.
        try await within(30) { await silent.waitForAClient() }

        let started = ContinuousClock.now
        let status = await server.stop(signal: SIGTERM)
        let took = ContinuousClock.now - started
        await silent.close()
        #expect(status == 0, "\(server.output.suffix(2_000))")
        // The shutdown timeout (1 s), then at most 2 s for the push connections to close.
        #expect(took < .seconds(15), "SIGTERM took \(took)")
        #expect(server.output.contains("did not close within 2"), "\(server.output.suffix(2_000))")
    }
}
