import Foundation
import IsletCore
import IsletEngine

/// An app's client keys and the installations they registered (docs/installations.md).
extension SQLReading {
    public func clientKeys(bundleId: BundleID) throws -> [ClientKey] {
        try session.rows("SELECT * FROM clientKey WHERE bundleId = $1 ORDER BY createdAt, id", [bundleId], SQLRows.clientKey)
    }

    public func clientKey(_ id: String) throws -> ClientKey? {
        try session.row("SELECT * FROM clientKey WHERE id = $1", [id], SQLRows.clientKey)
    }

    public func installation(_ id: String) throws -> Installation? {
        try session.row("SELECT * FROM installation WHERE id = $1", [id], SQLRows.installation)
    }

    public func installations(bundleId: BundleID, userId: String?, after: String?, limit: Int) throws -> [Installation] {
        var bound = SQLConditions()
        var sql = "SELECT * FROM installation WHERE bundleId = \(bound.value(bundleId))"
        if let userId { sql += " AND userId = \(bound.value(userId))" }
        if let after { sql += " AND id > \(bound.value(after))" }
        sql += " ORDER BY id LIMIT \(bound.value(limit))"
        return try session.rows(sql, bound.values, SQLRows.installation)
    }

    public func installationsRegistered(clientKeyId: String, since: Date) throws -> Int {
        try session.value(
            "SELECT COUNT(*) FROM installation WHERE clientKeyId = $1 AND createdAt >= $2", [clientKeyId, since.timeIntervalSince1970], as: Int.self
        ) ?? 0
    }

    public func installationsRegistered(addressHash: String, since: Date) throws -> Int {
        try session.value(
            "SELECT COUNT(*) FROM installation WHERE addressHash = $1 AND createdAt >= $2", [addressHash, since.timeIntervalSince1970], as: Int.self
        ) ?? 0
    }

    public func installationCount(bundleId: BundleID) throws -> Int {
        try session.value("SELECT COUNT(*) FROM installation WHERE bundleId = $1", [bundleId], as: Int.self) ?? 0
    }

    public func userVerificationSecret(bundleId: BundleID) throws -> String? {
        try session.row("SELECT userVerificationSecret FROM app WHERE bundleId = $1", [bundleId]) { row in
            try row["userVerificationSecret", as: String?.self]
        } ?? nil
    }
}

extension SQLWriting {
    public func insertClientKey(_ key: ClientKey, hash: String) throws {
        try session.execute(
            """
            INSERT INTO clientKey (id, bundleId, hash, name, prefix, createdAt, revokedAt, lastUsedAt, installations)
            VALUES ($1, $2, $3, $4, $5, $6, NULL, NULL, 0)
            """,
            [key.id, key.bundleId, hash, key.name, key.prefix, key.createdAt.timeIntervalSince1970]
        )
    }

    public func revokeClientKey(_ id: String, at date: Date) throws {
        try session.execute("UPDATE clientKey SET revokedAt = $2 WHERE id = $1 AND revokedAt IS NULL", [id, date.timeIntervalSince1970])
    }

    public func clientKeyUsed(_ id: String, at date: Date) throws {
        try session.execute(
            "UPDATE clientKey SET lastUsedAt = $2, installations = installations + 1 WHERE id = $1", [id, date.timeIntervalSince1970]
        )
    }

    public func insertInstallation(_ installation: Installation, addressHash: String) throws {
        try session.execute(
            """
            INSERT INTO installation (id, bundleId, platform, environment, userId, clientKeyId, addressHash, createdAt, lastSeenAt, revoked)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
            """,
            [
                installation.id, installation.bundleId, installation.platform.rawValue, installation.environment.rawValue, installation.userId,
                installation.clientKeyId, addressHash, installation.createdAt.timeIntervalSince1970, installation.lastSeenAt.timeIntervalSince1970,
                installation.revoked,
            ]
        )
    }

    public func installationSeen(_ id: String, at date: Date) throws {
        try session.execute("UPDATE installation SET lastSeenAt = $2 WHERE id = $1", [id, date.timeIntervalSince1970])
    }

    public func setInstallationUser(_ id: String, userId: String?) throws {
        try session.execute("UPDATE installation SET userId = $2 WHERE id = $1", [id, userId])
    }

    public func revokeInstallations(clientKeyId: String) throws -> [String] {
        let ids = try session.values("SELECT id FROM installation WHERE clientKeyId = $1 AND NOT revoked ORDER BY id", [clientKeyId], as: String.self)
        try session.execute(
            "DELETE FROM apiKey WHERE deviceId IN (SELECT id FROM installation WHERE clientKeyId = $1) AND bundleId IS NOT NULL", [clientKeyId]
        )
        try session.execute("UPDATE installation SET revoked = $2 WHERE clientKeyId = $1", [clientKeyId, true])
        return ids
    }

    public func revokeInstallation(_ id: String) throws {
        try session.execute("DELETE FROM apiKey WHERE deviceId = $1 AND bundleId IS NOT NULL", [id])
        try session.execute("UPDATE installation SET revoked = $2 WHERE id = $1", [id, true])
    }

    public func setUserVerificationSecret(bundleId: BundleID, secret: String?) throws {
        try session.execute("UPDATE app SET userVerificationSecret = $2 WHERE bundleId = $1", [bundleId, secret])
    }
}

extension SQLRows {
    public static func clientKey(_ row: any SQLRow) throws -> ClientKey {
        ClientKey(
            id: try row["id"], bundleId: try row["bundleId"], name: try row["name"], prefix: try row["prefix"], createdAt: try row.date("createdAt"),
            revokedAt: try row.optionalDate("revokedAt"), lastUsedAt: try row.optionalDate("lastUsedAt"), installations: try row["installations"]
        )
    }

    public static func installation(_ row: any SQLRow) throws -> Installation {
        Installation(
            id: try row["id"], bundleId: try row["bundleId"], platform: DevicePlatform(rawValue: try row["platform"]) ?? .ios,
            environment: APNsEnvironment(rawValue: try row["environment"]) ?? .production, userId: try row["userId"],
            clientKeyId: try row["clientKeyId"], createdAt: try row.date("createdAt"), lastSeenAt: try row.date("lastSeenAt"),
            revoked: try row["revoked"]
        )
    }
}
