import Foundation
import GRDB
import IsletCore

extension SQLiteStore {
    /// Creates an app with its first API key (stored as a hash only).
    public func createApp(_ app: App, keyHash: String) async throws {
        try App.validate(bundleId: app.bundleId)
        try await write(now: app.createdAt) { db, log in
            if try Bool.fetchOne(db, sql: "SELECT 1 FROM app WHERE bundleId = ?", arguments: [app.bundleId]) != nil {
                throw IsletError(.appAlreadyExists, "An app \(app.bundleId) already exists.")
            }
            try db.execute(
                sql: "INSERT INTO app (bundleId, name, createdAt) VALUES (?, ?, ?)",
                arguments: [app.bundleId, app.name, app.createdAt.timeIntervalSince1970]
            )
            try db.execute(
                sql: "INSERT INTO apiKey (hash, bundleId, createdAt) VALUES (?, ?, ?)",
                arguments: [keyHash, app.bundleId, app.createdAt.timeIntervalSince1970]
            )
            for deviceId in try String.fetchAll(db, sql: "SELECT id FROM device ORDER BY id") {
                try PushTokens.issuePushToStart(
                    deviceId: deviceId, bundleId: app.bundleId, now: app.createdAt, db: db, log: &log, announce: false
                )
            }
        }
    }

    /// Every app, by bundle identifier.
    public func apps() async throws -> [App] {
        try await read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM app ORDER BY bundleId").map(Self.app(from:))
        }
    }

    /// One app.
    public func app(_ bundleId: BundleID) async throws -> App {
        try await read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM app WHERE bundleId = ?", arguments: [bundleId])
            else {
                throw IsletError(.appNotFound, "No app \(bundleId).")
            }
            return Self.app(from: row)
        }
    }

    /// Who the key with this hash speaks for, if anyone.
    public func keyOwner(hash: String) async throws -> KeyOwner? {
        try await read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT bundleId, deviceId FROM apiKey WHERE hash = ?", arguments: [hash])
            else { return nil }
            if let bundleId: String = row["bundleId"] { return .app(bundleId) }
            if let deviceId: String = row["deviceId"] { return .device(deviceId) }
            return .admin
        }
    }

    /// Makes the key with this hash the only admin key.
    public func replaceAdminKey(hash: String, now: Date) async throws {
        try await write(now: now) { db, _ in
            try db.execute(sql: "DELETE FROM apiKey WHERE bundleId IS NULL AND deviceId IS NULL")
            try db.execute(
                sql: "INSERT INTO apiKey (hash, bundleId, createdAt) VALUES (?, NULL, ?)",
                arguments: [hash, now.timeIntervalSince1970]
            )
        }
    }

    /// Turns strict pushes on or off for an app.
    public func setStrictPushes(_ strict: Bool, bundleId: BundleID) async throws -> App {
        try await write { db in
            try db.execute(sql: "UPDATE app SET strictPushes = ? WHERE bundleId = ?", arguments: [strict, bundleId])
            guard db.changesCount > 0,
                let row = try Row.fetchOne(db, sql: "SELECT * FROM app WHERE bundleId = ?", arguments: [bundleId])
            else {
                throw IsletError(.appNotFound, "No app \(bundleId).")
            }
            return Self.app(from: row)
        }
    }

    private static func app(from row: Row) -> App {
        App(
            bundleId: row["bundleId"], name: row["name"], createdAt: Date(timeIntervalSince1970: row["createdAt"]),
            strictPushes: row["strictPushes"]
        )
    }
}
