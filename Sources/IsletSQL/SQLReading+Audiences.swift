import Foundation
import IsletCore
import IsletEngine

/// An app's users, their phones and tags (docs/audiences.md).
extension SQLReading {
    public func appUser(bundleId: BundleID, externalId: String) throws -> AppUser? {
        try session.row("SELECT * FROM appUser WHERE bundleId = $1 AND externalId = $2", [bundleId, externalId], SQLRows.appUser)
    }

    /// The app's users with every one of `tags`, after `after` in `externalId` order: from
    /// the first tag's index range (or the users' own) with the others checked beside it.
    public func appUsers(bundleId: BundleID, tags: [String: String], after: String?, limit: Int) throws -> [AppUser] {
        var bound = SQLConditions()
        let app = bound.value(bundleId)
        let sorted = tags.sorted { $0.key < $1.key }
        var sql: String
        if let (name, tagValue) = sorted.first {
            sql = "SELECT u.* FROM appUserTag t JOIN appUser u ON u.bundleId = t.bundleId AND u.externalId = t.externalId"
                + " WHERE t.bundleId = \(app) AND t.name = \(bound.value(name)) AND t.value = \(bound.value(tagValue))"
        } else {
            sql = "SELECT u.* FROM appUser u WHERE u.bundleId = \(app)"
        }
        for (name, tagValue) in sorted.dropFirst() {
            sql += " AND EXISTS (SELECT 1 FROM appUserTag o WHERE o.bundleId = u.bundleId AND o.externalId = u.externalId"
                + " AND o.name = \(bound.value(name)) AND o.value = \(bound.value(tagValue)))"
        }
        if let after { sql += " AND u.externalId > \(bound.value(after))" }
        sql += " ORDER BY u.externalId LIMIT \(bound.value(limit))"
        return try session.rows(sql, bound.values, SQLRows.appUser)
    }
}

extension SQLWriting {
    /// Writes a user whole: the row, and its tags' and phones' index rows.
    public func putAppUser(_ user: AppUser) throws {
        try session.execute(
            """
            INSERT INTO appUser (bundleId, externalId, devices, tags, createdAt, updatedAt) VALUES ($1, $2, $3, $4, $5, $6)
            ON CONFLICT (bundleId, externalId) DO UPDATE SET devices = excluded.devices, tags = excluded.tags, updatedAt = excluded.updatedAt
            """,
            [
                user.bundleId, user.externalId, try WireFormat.string(user.devices), try WireFormat.string(user.tags),
                user.createdAt.timeIntervalSince1970, user.updatedAt.timeIntervalSince1970,
            ]
        )
        try deleteAppUserIndexes(bundleId: user.bundleId, externalId: user.externalId)
        for (name, value) in user.tags {
            try session.execute(
                "INSERT INTO appUserTag (bundleId, name, value, externalId) VALUES ($1, $2, $3, $4)", [user.bundleId, name, value, user.externalId]
            )
        }
        for device in user.devices {
            try session.execute("INSERT INTO appUserDevice (bundleId, deviceId, externalId) VALUES ($1, $2, $3)", [user.bundleId, device, user.externalId])
        }
    }

    /// Forgets a user; whether there was one.
    public func deleteAppUser(bundleId: BundleID, externalId: String) throws -> Bool {
        try deleteAppUserIndexes(bundleId: bundleId, externalId: externalId)
        return try session.count("DELETE FROM appUser WHERE bundleId = $1 AND externalId = $2", [bundleId, externalId]) > 0
    }

    private func deleteAppUserIndexes(bundleId: BundleID, externalId: String) throws {
        try session.execute("DELETE FROM appUserTag WHERE bundleId = $1 AND externalId = $2", [bundleId, externalId])
        try session.execute("DELETE FROM appUserDevice WHERE bundleId = $1 AND externalId = $2", [bundleId, externalId])
    }
}

extension SQLRows {
    public static func appUser(_ row: any SQLRow) throws -> AppUser {
        AppUser(
            bundleId: try row["bundleId"], externalId: try row["externalId"],
            devices: try WireFormat.decoder().decode([DeviceID].self, from: Data(try row["devices", as: String.self].utf8)),
            tags: try WireFormat.decoder().decode([String: String].self, from: Data(try row["tags", as: String.self].utf8)),
            createdAt: try row.date("createdAt"), updatedAt: try row.date("updatedAt")
        )
    }
}
