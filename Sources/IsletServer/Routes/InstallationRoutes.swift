import Crypto
import Foundation
import Hummingbird
import IsletCore
import IsletEngine
import NIOCore

/// Apps that ship (docs/installations.md): an app's client keys, the installations they
/// register, and an app's secret for the user ids its backend signs.
struct InstallationRoutes {
    let engine: Engine
    let keys: KeyRing

    func add(to router: Router<IsletRequestContext>) {
        router.post("v1/apps/:bundleId/client-keys", use: createClientKey)
        router.get("v1/apps/:bundleId/client-keys", use: clientKeys)
        router.delete("v1/apps/:bundleId/client-keys/:id", use: revokeClientKey)
        router.post("v1/apps/:bundleId/user-verification-secret", use: replaceUserVerificationSecret)
        router.post("v1/installations", use: register)
        router.get("v1/installations", use: list)
        router.get("v1/installations/:id", use: get)
        router.patch("v1/installations/:id", use: setUser)
        router.post("v1/installations/:id/credential", use: replaceCredential)
        router.delete("v1/installations/:id", use: unregister)
    }

    // MARK: Client keys

    @Sendable func createClientKey(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let bundleId = try context.actingApp(requested: try context.parameters.require("bundleId"))
        let body = try await request.decodeJSON(CreateClientKeyBody.self, limit: InstallationLimits.maximumBody)
        let key = KeyRing.generate(for: .client(id: "", bundleId: bundleId))
        let made = try await engine.createClientKey(
            bundleId: bundleId, name: try body.checkedName(), hash: KeyRing.hash(key), prefix: String(key.prefix(11))
        )
        return try Response.json(CreatedClientKey(clientKey: made, key: key), status: .created)
    }

    @Sendable func clientKeys(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let bundleId = try context.actingApp(requested: try context.parameters.require("bundleId"))
        return try Response.json(["clientKeys": try await engine.clientKeys(bundleId: bundleId)])
    }

    /// `?installations=cut` revokes the credentials of the installations it registered too.
    @Sendable func revokeClientKey(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let bundleId = try context.actingApp(requested: try context.parameters.require("bundleId"))
        let cut: Bool
        switch request.query("installations") {
        case nil, "keep": cut = false
        case "cut": cut = true
        case let other?: throw IsletError(.invalidRequest, "installations: keep (the default) or cut; not \(other.prefix(20)).")
        }
        let (key, count) = try await engine.revokeClientKey(bundleId: bundleId, id: try context.parameters.require("id"), cutInstallations: cut)
        return try Response.json(RevokedClientKey(clientKey: key, installationsCut: count))
    }

    /// A new user verification secret (shown once), replacing the earlier at once.
    @Sendable func replaceUserVerificationSecret(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let bundleId = try context.actingApp(requested: try context.parameters.require("bundleId"))
        let secret = "uvs_" + KeyRing.generate(for: .admin).dropFirst("islet_admin_".count)
        try await engine.replaceUserVerificationSecret(bundleId: bundleId, secret: secret)
        return try Response.json(UserVerificationSecret(secret: secret), status: .created)
    }

    // MARK: Installations

    /// `POST /v1/installations`, with a client key.
    @Sendable func register(_ request: Request, context: IsletRequestContext) async throws -> Response {
        guard case .client(let keyId, let bundleId) = try context.requireOwner() else {
            throw IsletError(.forbidden, "An installation is registered with the app's client key (pk_…); see docs/installations.md.")
        }
        let body = try await request.decodeJSON(RegisterInstallationBody.self, limit: InstallationLimits.maximumBody)
        let credential = KeyRing.generate(for: .installation(id: "", bundleId: bundleId))
        let installation = try await engine.registerInstallation(
            body, clientKey: (keyId, bundleId), addressHash: Self.addressHash(request, context: context), credentialHash: KeyRing.hash(credential),
            verify: Self.verify
        )
        return try Response.json(RegisteredInstallation(installation: installation, credential: credential), status: .created)
    }

    /// `GET /v1/installations?user=…`: the app's (the app's key, or the admin's or the keyless
    /// console's naming `bundleId`; the console is shown no tokens).
    @Sendable func list(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let bundleId: BundleID
        if let own = try context.operatorScope() {
            bundleId = try context.operatedApp(requested: request.query("bundleId") ?? own)
        } else {
            guard let named = request.query("bundleId") else {
                throw IsletError(.invalidRequest, "Name the app: ?bundleId=…, or use the app's key.")
            }
            bundleId = named
        }
        let page = try await engine.installations(bundleId: bundleId, userId: request.query("user"), page: try request.page(of: String.self))
        return try Response.json(Listing("installations", context.showsTokens ? page : page.map(\.withoutTokens)))
    }

    @Sendable func get(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let id = try await installation(context, allowing: .itself, .app)
        return try Response.json(try await engine.installationReport(id))
    }

    /// `PATCH /v1/installations/{id}` `{"userId", "userIdSignature", "tags"}`: the installation
    /// signs in (the backend signed the user's id), out (`"userId": null`), or gives tags.
    @Sendable func setUser(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let id = try await installation(context, allowing: .itself)
        let body = try await request.decodeJSON(InstallationUserBody.self, limit: InstallationLimits.maximumBody)
        return try Response.json(try await engine.setInstallationUser(
            id, userId: body.userId, signature: body.userIdSignature, tags: body.tags, verify: Self.verify
        ))
    }

    @Sendable func replaceCredential(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let id = try await installation(context, allowing: .itself)
        let credential = KeyRing.generate(for: .installation(id: id, bundleId: ""))
        try await engine.replaceInstallationCredential(id, hash: KeyRing.hash(credential))
        return try Response.json(InstallationCredential(installationId: id, credential: credential), status: .created)
    }

    @Sendable func unregister(_ request: Request, context: IsletRequestContext) async throws -> Response {
        try await engine.unregisterInstallation(try await installation(context, allowing: .itself, .app))
        return Response(status: .noContent)
    }

    private enum Caller { case itself, app }

    /// The installation a route names — `self` for the credential's own — checked against who
    /// asks: the installation itself, and (where `allowed`) its app's key or the admin. Another
    /// installation's is not found, as one that does not exist.
    private func installation(_ context: IsletRequestContext, allowing allowed: Caller...) async throws -> String {
        let named = try context.parameters.require("id")
        switch try context.requireOwner() {
        case .installation(let own, _):
            guard allowed.contains(.itself) else { throw IsletRequestContext.installationOnly }
            guard named == "self" || named == own else { throw IsletError(.deviceNotFound, "No installation \(named.prefix(64)).") }
            return own
        case .admin, .app(_):
            guard allowed.contains(.app) else { throw IsletError(.forbidden, "Only the installation itself may do this, with its credential.") }
            let report = try await engine.installationReport(named)
            // Another app's is not found, as one that does not exist.
            if case .app(let own) = context.owner, own != report.installation.bundleId {
                throw IsletError(.deviceNotFound, "No installation \(named.prefix(64)).")
            }
            return named
        case .device: throw IsletRequestContext.displayOnly
        case .client: throw IsletRequestContext.clientKeyOnly
        }
    }

    /// Checks a user id's signature: hex HMAC-SHA256 of the id under the app's secret, compared
    /// in time that does not depend on where they differ.
    static let verify: UserIdVerifier = { userId, signature, secret in
        let expected = Array(HMAC<SHA256>.authenticationCode(for: Data(userId.utf8), using: SymmetricKey(data: Data(secret.utf8))).hexEncoded.utf8)
        let given = Array(signature.lowercased().utf8)
        guard given.count == expected.count else { return false }
        return zip(given, expected).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }

    /// The hash of the address an installation registers from, for the per-address limit: the
    /// connection's peer — or, when that is a proxy on this machine (loopback), the last address
    /// it appended to `X-Forwarded-For`. A remote peer's own `X-Forwarded-For` counts for nothing.
    static func addressHash(_ request: Request, context: IsletRequestContext) -> String {
        var address = context.channel.remoteAddress?.ipAddress ?? "unknown"
        let loopback = address == "127.0.0.1" || address == "::1" || address.hasPrefix("127.") || address == "::ffff:127.0.0.1"
        if loopback, let forwarded = request.headers[values: .init("X-Forwarded-For")!].last?.split(separator: ",").last {
            address = forwarded.trimmingCharacters(in: .whitespaces)
        }
        return KeyRing.hash("address:" + address)
    }
}
