import AsyncHTTPClient
import Crypto
import Foundation
import IsletAPNs
import IsletClient
import IsletCore
import IsletServer
import NIOSSL
import Testing

/// A provider of pushes: an app with a registered ES256 key, and an HTTP/2 client that trusts
/// the server's development CA.
struct Provider: Sendable {
    let bundleId: String
    let apiKey: String
    let signer: ProviderTokenSigner
    let apns: APNsClient
    let islet: Harness

    /// A fresh provider token, issued at the server's current time unless told otherwise.
    func jwt(issuedAt: Date? = nil) async throws -> String {
        try await signer.token(issuedAt: issuedAt ?? islet.clock.now())
    }

    /// Pushes a payload to a token.
    func push(
        _ token: String, _ payload: String, topic: String? = nil, headers: [(String, String)] = [], jwt: String? = nil
    ) async throws -> APNsClient.Response {
        let providerToken: String
        if let jwt { providerToken = jwt } else { providerToken = try await self.jwt() }
        return try await apns.push(
            token: token, topic: topic ?? bundleId, payload: Data(payload.utf8), providerToken: providerToken,
            extraHeaders: headers
        )
    }

    /// An update payload.
    static func update(_ state: String, timestamp: Int? = nil, extra: String = "") -> String {
        #"{"aps":{"event":"update","content-state":\#(state)\#(timestamp.map { #","timestamp":\#($0)"# } ?? "")\#(extra)}}"#
    }

    /// Starts an activity with a push token through the REST API; returns it.
    func startWithToken(state: JSONValue = ["step": 1], type: String = "DeliveryAttributes") async throws -> Activity {
        try await islet.isletClient(key: apiKey).start(ActivityRequest(
            attributesType: type, attributes: ["order": "42"], content: ActivityContent(state: state), pushType: .token
        ))
    }
}

extension Harness {
    /// An HTTP/2 client that trusts this server's development CA.
    func apnsHTTPClient() throws -> HTTPClient {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .file(islet.authorityPath!)
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// Creates an app with a provider key registered, and runs `body` with it.
    func withProvider<T: Sendable>(
        _ bundleId: String = "com.example.delivery", keyId: String = "KEY1234567", teamId: String = "TEAM123456",
        _ body: (Provider) async throws -> T
    ) async throws -> T {
        let apiKey = try await createApp(bundleId)
        let privateKey = P256.Signing.PrivateKey()
        let signer = try await ProviderTokenSigner(p8: privateKey.pemRepresentation, keyId: keyId, teamId: teamId)
        _ = try await isletClient(key: apiKey).addProviderKey(
            bundleId: bundleId, keyId: keyId, teamId: teamId, publicKey: privateKey.publicKey.pemRepresentation
        )
        let http = try apnsHTTPClient()
        let provider = Provider(
            bundleId: bundleId, apiKey: apiKey, signer: signer,
            apns: APNsClient(server: "https://localhost:\(apnsPort!)", http: http), islet: self
        )
        do {
            let value = try await body(provider)
            try await http.shutdown()
            return value
        } catch {
            try? await http.shutdown()
            throw error
        }
    }
}

extension HTTPClient {
    /// Runs `body` with this client, then shuts it down, whether `body` throws or not: a client
    /// let go of unshut traps in its deinit (async-http-client's check in debug builds), and takes
    /// the whole test process with it — a request that failed on a loaded machine did so once.
    func shuttingDown<T>(after body: (HTTPClient) async throws -> T) async throws -> T {
        do {
            let value = try await body(self)
            try await shutdown()
            return value
        } catch {
            try? await shutdown()
            throw error
        }
    }
}
