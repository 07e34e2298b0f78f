import Foundation
import IsletCore

extension Engine {
    // MARK: An app's users (docs/audiences.md)

    /// Writes one of an app's users whole: its phones (each must exist) and its tags replace
    /// what it had. Returns the user as stored, and whether it was new.
    public func putUser(bundleId: BundleID, externalId: String, _ body: PutAppUserBody) async throws -> (user: AppUser, created: Bool) {
        try AppUser.checkExternalId(externalId)
        let (devices, tags) = try body.checked()
        return try await write { tx in
            _ = try tx.requireApp(bundleId)
            for device in devices where try tx.device(device) == nil {
                throw IsletError(.deviceNotFound, "devices: no device \(device.prefix(100)).")
            }
            let before = try tx.appUser(bundleId: bundleId, externalId: externalId)
            let user = AppUser(
                bundleId: bundleId, externalId: externalId, devices: devices, tags: tags, createdAt: before?.createdAt ?? tx.now, updatedAt: tx.now
            )
            try tx.putAppUser(user)
            return (user, before == nil)
        }
    }

    /// One of an app's users, or `userNotFound`.
    public func user(bundleId: BundleID, externalId: String) async throws -> AppUser {
        try await read { store in
            _ = try store.requireApp(bundleId)
            guard let user = try store.appUser(bundleId: bundleId, externalId: externalId) else {
                throw IsletError(.userNotFound, "\(bundleId) has no user \(externalId.prefix(128)).")
            }
            return user
        }
    }

    /// A page of an app's users with every one of `tags`, in `externalId` order.
    public func users(bundleId: BundleID, tags: [String: String], page: PageRequest<String>) async throws -> Page<AppUser> {
        try AppUser.checkTags(tags, field: "tag")
        return try await read { store in
            _ = try store.requireApp(bundleId)
            let found = try store.appUsers(bundleId: bundleId, tags: tags, after: page.after, limit: page.limit + 1)
            return page.page(of: found.map { (item: $0, place: $0.externalId) })
        }
    }

    /// Forgets one of an app's users and their tags (not their phones, nor what those show),
    /// or `userNotFound`.
    public func deleteUser(bundleId: BundleID, externalId: String) async throws {
        try await write { tx in
            _ = try tx.requireApp(bundleId)
            guard try tx.deleteAppUser(bundleId: bundleId, externalId: externalId) else {
                throw IsletError(.userNotFound, "\(bundleId) has no user \(externalId.prefix(128)).")
            }
        }
    }
}
