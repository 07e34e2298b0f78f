import Crypto
import Foundation
import NIOCore
import NIOHTTP1

/// Islet A as a backend delivering to "Apple": a sink that answers 200 at once, or Islet B
/// playing Apple (strict: a 200 there was applied); the app on A with its credentials, and a
/// phone per activity whose update token is Apple's. What `delivery` and `soak` drive.
struct DeliveryBackend {
    var apple: ServerUnderTest
    var backend: ServerUnderTest
    /// The activities, on the phones `d0`, `d1`… (one each unless fewer devices were asked for).
    var ids: [String]
    /// The app key's header on A.
    var auth: [(String, String)]
    /// The app's provider key, and its key on B (`appKey` is empty for a sink).
    var provider: Provider

    /// Starts both and sets them up; the caller stops them.
    static func start(
        systems: Systems, store: StoreChoice, phones: Int, devices: Int? = nil, sink: Bool, bundleId: String,
        environment: [String: String] = [:], appleEnvironment: [String: String] = [:]
    ) async throws -> DeliveryBackend {
        // B plays Apple: the app, its key, and an activity with a push token per phone — or a
        // sink that takes any token, with a key of A's own.
        let apple: ServerUnderTest
        let provider: Provider
        let tokens: [String]
        let appleCA: URL
        let applePort: Int
        if sink {
            apple = try await systems.startSink(name: "a sink answering 200 at once")
            provider = Provider(
                appKey: "", jwt: "", privateKey: P256.Signing.PrivateKey().pemRepresentation, keyId: "BENCHKEY01", teamId: "BENCHTEAM1"
            )
            tokens = (0..<phones).map { _ in (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined() }
            (appleCA, applePort) = (apple.directory.appendingPathComponent("cert.pem"), apple.port)
        } else {
            apple = try await systems.startIslet(durability: store.durability, apns: true, name: "B, playing Apple", environment: appleEnvironment)
            provider = try await Provider.register(on: apple, bundleId: bundleId, strict: true)
            // B's phones are A's: each activity on the device its twin is on, so that B counts
            // each phone's priority-10 budget as A plans it.
            let devices = devices ?? phones
            try await IsletSetup.devices(devices, port: apple.port, admin: try apple.adminKey)
            tokens = try await Provider.pushTokens(phones, port: apple.port, key: provider.appKey) { "d\($0 % devices)" }
            (appleCA, applePort) = (apple.directory.appendingPathComponent("data/tls/ca.pem"), apple.apnsPort!)
        }
        let backend: ServerUnderTest
        do {
            backend = try await systems.startIslet(durability: store.durability, name: "A, the backend", environment: environment)
        } catch {
            apple.stop()
            throw error
        }
        do {
            let (ids, auth) = try await setUp(
                backend, activities: phones, devices: devices ?? phones, bundleId: bundleId, provider: provider, tokens: tokens, ca: appleCA,
                port: applePort
            )
            return DeliveryBackend(apple: apple, backend: backend, ids: ids, auth: auth, provider: provider)
        } catch {
            backend.stop()
            apple.stop()
            throw error
        }
    }

    /// A: the app, its credentials sending to Apple, and the activities spread over `devices` phones.
    private static func setUp(
        _ backend: ServerUnderTest, activities phones: Int, devices: Int, bundleId: String, provider: Provider, tokens: [String], ca appleCA: URL, port applePort: Int
    ) async throws -> ([String], [(String, String)]) {
        let admin = try backend.adminKey
        let setup = try await HTTPConnection.connect(port: backend.port)
        let appKey = try await IsletSetup.app(on: setup, admin: admin, bundleId: bundleId)
        let ca = try String(contentsOf: appleCA, encoding: .utf8)
        let credential = try JSONSerialization.data(withJSONObject: [
            "teamId": provider.teamId, "keyId": provider.keyId, "privateKey": provider.privateKey, "environment": "development",
            "url": "https://127.0.0.1:\(applePort)", "caCertificate": ca,
        ])
        let (status, answer) = try await setup.send(
            .PUT, "/v1/apps/\(bundleId)/delivery", headers: [("Authorization", "Bearer \(admin)")], body: ByteBuffer(bytes: credential)
        )
        guard status == 200 else { throw HarnessError("registering the credentials: \(status) \(String(buffer: answer))") }
        await setup.close()
        try await IsletSetup.devices(devices, port: backend.port, admin: admin)
        let ids = try await IsletSetup.activities(phones, port: backend.port, key: appKey) { "d\($0 % devices)" }
        let auth = [("Authorization", "Bearer \(appKey)")]
        @Sendable func register(_ body: String, at uri: String, on connection: HTTPConnection) async throws {
            let (status, answer) = try await connection.send(.PUT, uri, headers: auth, body: ByteBuffer(string: body))
            guard status == 200 else { throw HarnessError("registering a token: \(status) \(String(buffer: answer))") }
        }
        // Each phone's push-to-start token says its environment; then each activity's update token, B's.
        _ = try await IsletSetup.inLanes(devices, port: backend.port) { connection, index in
            let pushToStart = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
            try await register(#"{"token":"\#(pushToStart)","environment":"development"}"#, at: "/v1/devices/d\(index)/push-to-start-tokens/Bench", on: connection)
        }
        _ = try await IsletSetup.inLanes(phones, port: backend.port) { connection, index in
            try await register(#"{"token":"\#(tokens[index])","device":"d\#(index % devices)"}"#, at: "/v1/activities/\(ids[index])/push-token", on: connection)
        }
        return (ids, auth)
    }
}
