import Foundation
import Hummingbird
import IsletCore
import IsletEngine
import IsletFCM
import Synchronization

/// Android phones on the REST port (docs/android.md): an app's FCM credential and the phones'
/// registration tokens (the provider side), and the service accounts Islet issues when it
/// plays Google.
struct AndroidRoutes {
    let engine: Engine
    let maxBodySize: Int
    /// This server's push port, once it listens: where the accounts it issues get their tokens.
    let pushAddress: PushAddress

    func add(to router: Router<IsletRequestContext>) {
        router.put("v1/apps/:bundleId/fcm", use: putCredential)
        router.get("v1/apps/:bundleId/fcm", use: getCredential)
        router.delete("v1/apps/:bundleId/fcm", use: deleteCredential)
        router.put("v1/devices/:id/fcm-token", use: putToken)
        router.post("v1/fcm/service-accounts", use: issueServiceAccount)
    }

    @Sendable func putCredential(_ request: Request, context: IsletRequestContext) async throws -> Response {
        try context.requireAdmin()
        let bundleId = try context.parameters.require("bundleId")
        let body = try await request.decodeJSON(FCMCredentialBody.self, limit: maxBodySize)
        let text = try WireFormat.string(body.serviceAccount)
        let account = try ServiceAccount.read(Data(text.utf8))
        let url = try body.url.map { try PushServerAddress($0).description }
        let credential = FCMCredential(
            bundleId: bundleId, projectId: account.projectId, clientEmail: account.clientEmail, privateKeyId: account.privateKeyId,
            tokenUri: account.tokenUri, url: url, caCertificate: body.caCertificate, createdAt: engine.clock.now()
        )
        let stored = try await engine.putFCMCredential(StoredFCMCredential(credential: credential, serviceAccount: text))
        return try Response.json(stored)
    }

    @Sendable func getCredential(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let bundleId = try context.actingApp(requested: try context.parameters.require("bundleId"))
        return try Response.json(try await engine.fcmCredential(bundleId: bundleId))
    }

    @Sendable func deleteCredential(_ request: Request, context: IsletRequestContext) async throws -> Response {
        try context.requireAdmin()
        try await engine.deleteFCMCredential(bundleId: try context.parameters.require("bundleId"))
        return Response(status: .noContent)
    }

    /// An app's key, the admin's naming `bundleId`, or an installation's credential for its own
    /// device (docs/installations.md).
    @Sendable func putToken(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let deviceId = try context.parameters.require("id")
        let body = try await request.decodeJSON(FCMTokenBody.self, limit: maxBodySize)
        let installed = try context.installationReporting(on: deviceId, for: body.bundleId)
        if installed == nil { _ = try context.appScope() }
        let bundleId = try installed ?? context.actingApp(requested: body.bundleId)
        let token = try await engine.registerFCMAddress(try body.address(), deviceId: deviceId, bundleId: bundleId)
        if installed != nil { try await engine.installationUsed(deviceId) }
        return try Response.json(token)
    }

    /// A new service account whose `token_uri` is this server's push port: its JSON, private
    /// key included, answered once and kept nowhere; the server keeps the public key only.
    @Sendable func issueServiceAccount(_ request: Request, context: IsletRequestContext) async throws -> Response {
        try context.requireAdmin()
        let body = try await request.decodeJSON(ServiceAccountBody.self, limit: maxBodySize)
        guard let tokenURI = body.tokenUri ?? pushAddress.tokenURI else {
            throw IsletError(.invalidRequest, "This server's push port is off (apns.enabled: false): nothing here answers a token_uri.")
        }
        _ = try TokenAddress(tokenURI)
        let account = try ServiceAccount.issue(project: body.projectId, tokenURI: tokenURI)
        try await engine.keepIssuedAccount(try IssuedAccount(account))
        return try Response.json(account, status: .created)
    }
}

/// Where this server's push port listens, once it does: `https://host:port`.
final class PushAddress: Sendable {
    private let origin = Mutex<String?>(nil)

    /// Records the port it listens on, for a host as a client names it.
    func listening(host: String, port: Int) {
        let named = ["0.0.0.0", "::", ""].contains(host) ? "localhost" : host.contains(":") ? "[\(host)]" : host
        origin.withLock { $0 = "https://\(named):\(port)" }
    }

    /// The token endpoint of the accounts it issues.
    var tokenURI: String? { origin.withLock { $0 }.map { $0 + "/token" } }
}
