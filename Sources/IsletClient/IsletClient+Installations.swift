import AsyncHTTPClient
import Foundation
import IsletCore
import NIOHTTP1

/// Apps that ship (docs/installations.md): client keys and the installations they register.
extension IsletClient {
    // MARK: The backend's side (the app's key, the admin's)

    /// Makes a client key of an app (`pk_…`), shown this once.
    public func createClientKey(bundleId: BundleID, name: String? = nil) async throws -> CreatedClientKey {
        try await send(.POST, "/v1/apps/\(escaped(bundleId))/client-keys", body: CreateClientKeyBody(name: name), expect: CreatedClientKey.self)
    }

    /// An app's client keys, oldest first.
    public func clientKeys(bundleId: BundleID) async throws -> [ClientKey] {
        struct Keys: Decodable { var clientKeys: [ClientKey] }
        return try await send(.GET, "/v1/apps/\(escaped(bundleId))/client-keys", expect: Keys.self).clientKeys
    }

    /// Revokes a client key; with `cutInstallations`, the credentials of the installations it
    /// registered too.
    public func revokeClientKey(bundleId: BundleID, id: String, cutInstallations: Bool = false) async throws -> RevokedClientKey {
        try await send(
            .DELETE, "/v1/apps/\(escaped(bundleId))/client-keys/\(escaped(id))\(cutInstallations ? "?installations=cut" : "")",
            expect: RevokedClientKey.self
        )
    }

    /// A new user verification secret for an app, replacing the earlier, shown this once.
    public func replaceUserVerificationSecret(bundleId: BundleID) async throws -> UserVerificationSecret {
        try await send(.POST, "/v1/apps/\(escaped(bundleId))/user-verification-secret", expect: UserVerificationSecret.self)
    }

    /// An app's installations (one user's, when given), each with what it reported.
    public func installations(bundleId: BundleID? = nil, user: String? = nil) async throws -> [InstallationReport] {
        var query: [(String, String)] = []
        if let bundleId { query.append(("bundleId", bundleId)) }
        if let user { query.append(("user", user)) }
        return try await every("/v1/installations" + queryString(query), InstallationReport.self)
    }

    /// One installation and what it reported.
    public func installation(_ id: String) async throws -> InstallationReport {
        try await send(.GET, "/v1/installations/\(escaped(id))", expect: InstallationReport.self)
    }

    // MARK: The app's side (a client key, then the installation's credential)

    /// Registers an installation (with a client key as this client's key).
    public func registerInstallation(_ body: RegisterInstallationBody) async throws -> RegisteredInstallation {
        try await send(.POST, "/v1/installations", body: body, expect: RegisteredInstallation.self)
    }

    /// Signs the installation (this client's credential) in, out (`userId` nil), or gives tags.
    public func setInstallationUser(_ body: InstallationUserBody) async throws -> Installation {
        try await send(.PATCH, "/v1/installations/self", body: body, expect: Installation.self)
    }

    /// Replaces this client's installation credential; the earlier stops working.
    public func replaceInstallationCredential() async throws -> InstallationCredential {
        try await send(.POST, "/v1/installations/self/credential", expect: InstallationCredential.self)
    }

    /// Unregisters an installation: itself (`self`, its credential), or one of the app's.
    public func unregisterInstallation(_ id: String = "self") async throws {
        _ = try await send(.DELETE, "/v1/installations/\(escaped(id))", expect: NoContent.self)
    }
}
