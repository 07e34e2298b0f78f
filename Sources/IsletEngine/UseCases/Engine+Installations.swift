import Foundation
import IsletCore
import Synchronization

/// Checks that `signature` is the hex HMAC-SHA256 of `userId` under `secret`: the server's
/// cryptography, handed to the engine as its store and transport are.
public typealias UserIdVerifier = @Sendable (_ userId: String, _ signature: String, _ secret: String) -> Bool

extension Engine {
    // MARK: Client keys (docs/installations.md)

    /// Makes a client key of an app, kept under `hash`; `prefix` is the key's first characters.
    /// At most `ClientKey.maximumPerApp` unrevoked at once (`tooManyKeys`).
    public func createClientKey(bundleId: BundleID, name: String, hash: String, prefix: String) async throws -> ClientKey {
        try await write { tx in
            _ = try tx.requireApp(bundleId)
            let live = try tx.clientKeys(bundleId: bundleId).filter { $0.revokedAt == nil }
            guard live.count < ClientKey.maximumPerApp else {
                throw IsletError(
                    .tooManyKeys, "\(bundleId) has \(live.count) client keys; revoke one first (DELETE /v1/apps/\(bundleId)/client-keys/{id})."
                )
            }
            let key = ClientKey(id: ClientKey.newID(), bundleId: bundleId, name: name, prefix: prefix, createdAt: tx.now)
            try tx.insertClientKey(key, hash: hash)
            return key
        }
    }

    /// An app's client keys, oldest first, revoked ones too.
    public func clientKeys(bundleId: BundleID) async throws -> [ClientKey] {
        try await read { store in
            _ = try store.requireApp(bundleId)
            return try store.clientKeys(bundleId: bundleId)
        }
    }

    /// Revokes a client key: it registers nothing from then on. With `cutInstallations`, the
    /// credentials of every installation it registered are revoked too. Both stop working before
    /// this returns. Returns the key as revoked, and how many installations were cut.
    public func revokeClientKey(bundleId: BundleID, id: String, cutInstallations: Bool) async throws -> (key: ClientKey, cut: Int) {
        try await write { tx in
            _ = try tx.requireApp(bundleId)
            guard var key = try tx.clientKey(id), key.bundleId == bundleId else {
                throw IsletError(.keyNotFound, "\(bundleId) has no client key \(id.prefix(64)).")
            }
            if key.revokedAt == nil {
                try tx.revokeClientKey(id, at: tx.now)
                key.revokedAt = tx.now
            }
            tx.effects.keysReplaced.insert(.client(id: id, bundleId: bundleId))
            guard cutInstallations else { return (key, 0) }
            let cut = try tx.revokeInstallations(clientKeyId: id)
            for installation in cut { tx.effects.keysReplaced.insert(.installation(id: installation, bundleId: bundleId)) }
            return (key, cut.count)
        }
    }

    /// Makes `secret` the one an app's backend signs its users' ids with (`userIdSignature`),
    /// replacing the earlier one at once.
    public func replaceUserVerificationSecret(bundleId: BundleID, secret: String) async throws {
        try await write { tx in
            _ = try tx.requireApp(bundleId)
            try tx.setUserVerificationSecret(bundleId: bundleId, secret: secret)
        }
    }

    // MARK: Installations

    /// Registers an installation with a client key: a device of its own, its credential (kept
    /// under `credentialHash`), and its user's phones and tags.
    ///
    /// - Parameters:
    ///   - clientKey: The client key's id and app, as the key resolved.
    ///   - addressHash: The hash of the address it came from, for the per-address limit.
    ///   - verify: Checks a user id's signature against the app's secret.
    /// - Throws: `forbidden` for another app's client key; `unauthorized` for one revoked since;
    ///   `rateLimited` past a limit; `userNotVerified` for a user id without the backend's word.
    public func registerInstallation(
        _ body: RegisterInstallationBody, clientKey: (id: String, bundleId: BundleID), addressHash: String, credentialHash: String,
        verify: @escaping UserIdVerifier
    ) async throws -> Installation {
        try body.check()
        guard clientKey.bundleId == body.bundleId else {
            throw IsletError(.forbidden, "This client key belongs to \(clientKey.bundleId); it cannot register an installation of \(body.bundleId).")
        }
        return try await write { tx in
            _ = try tx.requireApp(body.bundleId)
            guard let key = try tx.clientKey(clientKey.id), key.revokedAt == nil else {
                throw IsletError(.unauthorized, "This client key was revoked; the app needs a build with a current one.")
            }
            try Self.checkRegistrationLimits(clientKeyId: key.id, addressHash: addressHash, bundleId: body.bundleId, in: tx)
            if let userId = body.userId {
                try Self.checkUser(userId, signature: body.userIdSignature, bundleId: body.bundleId, verify: verify, in: tx)
            }
            let installation = Installation(
                id: Installation.newID(), bundleId: body.bundleId, platform: body.platform, environment: body.environment ?? .production,
                userId: body.userId, clientKeyId: key.id, createdAt: tx.now, lastSeenAt: tx.now
            )
            let device = Device(id: installation.deviceId, name: "installation of \(body.bundleId)", createdAt: tx.now, platform: body.platform)
            try tx.insertDevice(device)
            for app in try tx.apps() { try tx.issueAppToken(device: device, bundleId: app.bundleId) }
            try tx.insertInstallation(installation, addressHash: addressHash)
            try tx.replaceKeys(of: .installation(id: installation.id, bundleId: body.bundleId), hash: credentialHash)
            try tx.clientKeyUsed(key.id, at: tx.now)
            try Self.join(installation, user: installation.audienceUser, tags: body.tags ?? [:], in: tx)
            return installation
        }
    }

    /// The limits where a hostile holder of a client key would push (docs/installations.md):
    /// per client key and per address in the last hour, and per app.
    private static func checkRegistrationLimits(clientKeyId: String, addressHash: String, bundleId: BundleID, in tx: any Transaction) throws {
        let hourAgo = tx.now.addingTimeInterval(-3_600)
        if try tx.installationsRegistered(clientKeyId: clientKeyId, since: hourAgo) >= InstallationLimits.perClientKeyPerHour {
            throw IsletError(
                .rateLimited, "This client key registered \(InstallationLimits.perClientKeyPerHour) installations in the last hour; try again later."
            )
        }
        if try tx.installationsRegistered(addressHash: addressHash, since: hourAgo) >= InstallationLimits.perAddressPerHour {
            throw IsletError(
                .rateLimited, "\(InstallationLimits.perAddressPerHour) installations were registered from this address in the last hour; try again later."
            )
        }
        if try tx.installationCount(bundleId: bundleId) >= InstallationLimits.perApp {
            throw IsletError(.rateLimited, "\(bundleId) holds \(InstallationLimits.perApp) installations, as many as an app may.")
        }
    }

    /// A user id from an app's side is taken only with its backend's signature: anyone can hold a
    /// client key, and a phone that joined another user's audience would show their activities.
    private static func checkUser(
        _ userId: String, signature: String?, bundleId: BundleID, verify: UserIdVerifier, in tx: any Transaction
    ) throws {
        guard let secret = try tx.userVerificationSecret(bundleId: bundleId) else {
            throw IsletError(
                .userNotVerified,
                "\(bundleId) has no user verification secret, so no user id is taken from an app; make one (POST /v1/apps/\(bundleId)/user-verification-secret), or link the phone from the backend."
            )
        }
        guard let signature, verify(userId, signature, secret) else {
            throw IsletError(.userNotVerified, "userIdSignature is not the backend's HMAC-SHA256 of this userId under the app's user verification secret.")
        }
    }

    /// Makes the installation's device one of `user`'s phones, with `tags` merged into theirs. A
    /// user's phones are capped (`AppUser.maximumDevices`): a full list drops its oldest
    /// installation first (a reinstalled app leaves its earlier install behind).
    private static func join(_ installation: Installation, user externalId: String, tags: [String: String], in tx: any Transaction) throws {
        let before = try tx.appUser(bundleId: installation.bundleId, externalId: externalId)
        var devices = (before?.devices ?? []).filter { $0 != installation.deviceId }
        if devices.count >= AppUser.maximumDevices, let oldest = devices.firstIndex(where: Installation.isInstallationID) {
            devices.remove(at: oldest)
        }
        guard devices.count < AppUser.maximumDevices else {
            throw IsletError(.invalidRequest, "User \(externalId.prefix(128)) has \(AppUser.maximumDevices) phones, none of them an installation to replace.")
        }
        let merged = (before?.tags ?? [:]).merging(tags) { _, new in new }
        try AppUser.checkTags(merged)
        try tx.putAppUser(AppUser(
            bundleId: installation.bundleId, externalId: externalId, devices: devices + [installation.deviceId], tags: merged,
            createdAt: before?.createdAt ?? tx.now, updatedAt: tx.now
        ))
    }

    /// Removes the installation's device from `user`'s phones; forgets a user of its own.
    private static func leave(_ installation: Installation, user externalId: String, in tx: any Transaction) throws {
        guard var user = try tx.appUser(bundleId: installation.bundleId, externalId: externalId) else { return }
        user.devices.removeAll { $0 == installation.deviceId }
        if user.devices.isEmpty, externalId == installation.id {
            _ = try tx.deleteAppUser(bundleId: installation.bundleId, externalId: externalId)
        } else {
            user.updatedAt = tx.now
            try tx.putAppUser(user)
        }
    }

    /// Moves an installation to the user its app's backend signed for — or, with no `userId`, back
    /// to a user of its own (signed out) — with `tags` merged into its user's.
    public func setInstallationUser(
        _ id: String, userId: String?, signature: String?, tags: [String: String]?, verify: @escaping UserIdVerifier
    ) async throws -> Installation {
        if let userId { try AppUser.checkExternalId(userId) }
        if let tags {
            guard tags.count <= InstallationLimits.tags else {
                throw IsletError(.invalidRequest, "tags: at most \(InstallationLimits.tags) for an installation; got \(tags.count).")
            }
            try AppUser.checkTags(tags)
        }
        return try await write { tx in
            var installation = try Self.requireInstallation(id, in: tx)
            if let userId { try Self.checkUser(userId, signature: signature, bundleId: installation.bundleId, verify: verify, in: tx) }
            if installation.userId != userId {
                try Self.leave(installation, user: installation.audienceUser, in: tx)
                installation.userId = userId
                try tx.setInstallationUser(id, userId: userId)
            }
            try Self.join(installation, user: installation.audienceUser, tags: tags ?? [:], in: tx)
            return installation
        }
    }

    /// One installation and what it reported, or `deviceNotFound` (as for a device that is not there).
    public func installationReport(_ id: String) async throws -> InstallationReport {
        try await read { store in
            let installation = try Self.requireInstallation(id, in: store)
            return InstallationReport(installation: installation, tokens: try Self.reportedTokens(of: installation, in: store))
        }
    }

    /// A page of an app's installations (one user's, when given), each with what it reported.
    public func installations(bundleId: BundleID, userId: String?, page: PageRequest<String>) async throws -> Page<InstallationReport> {
        if let userId { try AppUser.checkExternalId(userId) }
        return try await read { store in
            _ = try store.requireApp(bundleId)
            let found = try store.installations(bundleId: bundleId, userId: userId, after: page.after, limit: page.limit + 1)
            let reports = try found.map { InstallationReport(installation: $0, tokens: try Self.reportedTokens(of: $0, in: store)) }
            return page.page(of: reports.map { (item: $0, place: $0.installation.id) })
        }
    }

    /// Replaces an installation's credential with the one under `hash`; the earlier stops
    /// working before this returns.
    public func replaceInstallationCredential(_ id: String, hash: String) async throws {
        try await write { tx in
            let installation = try Self.requireInstallation(id, in: tx)
            try tx.replaceKeys(of: .installation(id: id, bundleId: installation.bundleId), hash: hash)
            tx.effects.keysReplaced.insert(.installation(id: id, bundleId: installation.bundleId))
            try tx.installationSeen(id, at: tx.now)
        }
    }

    /// Unregisters an installation (its app was signed out of, or removed): its tokens are
    /// retired, its credential revoked, and its device leaves its user's phones.
    public func unregisterInstallation(_ id: String) async throws {
        try await write { tx in
            let installation = try Self.requireInstallation(id, in: tx)
            for token in try tx.phoneTokens(deviceId: installation.deviceId) where token.bundleId == installation.bundleId && token.retiredAt == nil {
                try tx.retirePhoneToken(token.token, reason: "unregistered", appleTimestamp: nil)
            }
            try Self.leave(installation, user: installation.audienceUser, in: tx)
            try tx.revokeInstallation(id)
            tx.effects.keysReplaced.insert(.installation(id: id, bundleId: installation.bundleId))
        }
    }

    /// Says an installation's credential was used for a report now (its `lastSeenAt`): written
    /// at most once a minute an installation on this node, so a report costs no second write.
    public func installationUsed(_ id: String) async throws {
        guard installationsSeen.due(id, at: ContinuousClock.now) else { return }
        try await write { tx in try tx.installationSeen(id, at: tx.now) }
    }

    /// Refuses a push-to-start token of a type past the installation's limit of types
    /// (`InstallationLimits.pushToStartTypes`); one of a type it has is a replacement.
    public func checkPushToStartRoom(deviceId: DeviceID, bundleId: BundleID, attributesType: String) async throws {
        let types = try await read { store in
            Set(try store.phoneTokens(deviceId: deviceId).filter { $0.bundleId == bundleId && $0.kind == .pushToStart && $0.retiredAt == nil }
                .compactMap(\.attributesType))
        }
        guard types.contains(attributesType) || types.count < InstallationLimits.pushToStartTypes else {
            throw IsletError(
                .rateLimited, "This installation has push-to-start tokens of \(types.count) activity types, as many as one may; report one of those."
            )
        }
    }

    static func requireInstallation(_ id: String, in store: any StoreReading) throws -> Installation {
        guard let installation = try store.installation(id), !installation.revoked else {
            throw IsletError(.deviceNotFound, "No installation \(id.prefix(64)).")
        }
        return installation
    }

    /// An installation's tokens of its app, newest first.
    private static func reportedTokens(of installation: Installation, in store: any StoreReading) throws -> [PhoneToken] {
        try store.phoneTokens(deviceId: installation.deviceId).filter { $0.bundleId == installation.bundleId }
            .sorted { $0.createdAt > $1.createdAt }
    }
}

/// When each installation was last written seen on this node (`Engine.installationUsed`).
final class SeenRecently: Sendable {
    private let seen = Mutex<[String: ContinuousClock.Instant]>([:])
    /// How long a write of `lastSeenAt` stands for.
    static let interval: Duration = .seconds(60)

    /// Whether `id` is due a write at `now`; if so, it counts as written.
    func due(_ id: String, at now: ContinuousClock.Instant) -> Bool {
        seen.withLock { seen in
            if let last = seen[id], now - last < Self.interval { return false }
            if seen.count >= 100_000 { seen = seen.filter { now - $0.value < Self.interval } }
            seen[id] = now
            return true
        }
    }
}
