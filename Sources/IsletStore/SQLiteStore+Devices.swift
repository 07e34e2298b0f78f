import Foundation
import GRDB
import IsletCore

extension SQLiteStore {
    /// Creates the `default` device if it does not exist yet.
    public func ensureDefaultDevice(now: Date) async throws {
        try await write(now: now) { db, _ in
            try db.execute(
                sql: "INSERT OR IGNORE INTO device (id, name, createdAt) VALUES (?, ?, ?)",
                arguments: [DeviceID.defaultDevice, "Default", now.timeIntervalSince1970]
            )
        }
    }

    /// Creates a device.
    public func createDevice(_ device: Device) async throws {
        try Device.validate(id: device.id)
        try await write(now: device.createdAt) { db, log in
            if try Bool.fetchOne(db, sql: "SELECT 1 FROM device WHERE id = ?", arguments: [device.id]) != nil {
                throw IsletError(.deviceAlreadyExists, "A device \(device.id) already exists.")
            }
            try db.execute(
                sql: "INSERT INTO device (id, name, createdAt) VALUES (?, ?, ?)",
                arguments: [device.id, device.name, device.createdAt.timeIntervalSince1970]
            )
            for bundleId in try String.fetchAll(db, sql: "SELECT bundleId FROM app ORDER BY bundleId") {
                try PushTokens.issuePushToStart(
                    deviceId: device.id, bundleId: bundleId, now: device.createdAt, db: db, log: &log, announce: false
                )
            }
        }
    }

    /// Makes the key with this hash the only key of a device, replacing any earlier one.
    public func replaceDeviceKey(deviceId: DeviceID, hash: String, now: Date) async throws {
        try await write(now: now) { db, _ in
            try Self.requireDevice(deviceId, in: db)
            try db.execute(sql: "DELETE FROM apiKey WHERE deviceId = ?", arguments: [deviceId])
            try db.execute(
                sql: "INSERT INTO apiKey (hash, deviceId, createdAt) VALUES (?, ?, ?)",
                arguments: [hash, deviceId, now.timeIntervalSince1970]
            )
        }
    }

    /// Every device, by identifier.
    public func devices() async throws -> [Device] {
        try await read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM device ORDER BY id").map(Self.device(from:))
        }
    }

    /// One device, or `deviceNotFound`.
    public func device(_ id: DeviceID) async throws -> Device {
        try await read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM device WHERE id = ?", arguments: [id]) else {
                throw IsletError(.deviceNotFound, "No device \(id).")
            }
            return Self.device(from: row)
        }
    }

    private static func device(from row: Row) -> Device {
        Device(id: row["id"], name: row["name"], createdAt: Date(timeIntervalSince1970: row["createdAt"]))
    }

    /// A device's settings for every app (or only `bundleId`'s), defaults included.
    public func settings(deviceId: DeviceID, bundleId: BundleID? = nil) async throws -> [AppSettings] {
        try await read { db in
            try Self.requireDevice(deviceId, in: db)
            let bundleIds =
                if let bundleId {
                    [bundleId]
                } else {
                    try String.fetchAll(db, sql: "SELECT bundleId FROM app ORDER BY bundleId")
                }
            return try bundleIds.map { try Self.settings(deviceId: deviceId, bundleId: $0, in: db) }
        }
    }

    /// Changes a device's settings for an app. Turning Live Activities off ends and dismisses the
    /// app's activities on that device, as iOS does; every change is an event producers see.
    ///
    /// - Returns: The settings as committed.
    public func updateSettings(
        deviceId: DeviceID, bundleId: BundleID, activitiesEnabled: Bool?, frequentUpdates: Bool?, now: Date
    ) async throws -> AppSettings {
        let rules = self.rules
        return try await write(now: now) { db, log in
            try Self.requireDevice(deviceId, in: db)
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM app WHERE bundleId = ?", arguments: [bundleId]) != nil
            else {
                throw IsletError(.appNotFound, "No app \(bundleId).")
            }
            let before = try Self.settings(deviceId: deviceId, bundleId: bundleId, in: db)
            var after = before
            after.activitiesEnabled = activitiesEnabled ?? before.activitiesEnabled
            after.frequentUpdates = frequentUpdates ?? before.frequentUpdates
            guard after != before else { return after }
            try db.execute(
                sql: """
                    INSERT INTO appSettings (deviceId, bundleId, activitiesEnabled, frequentUpdates) VALUES (?, ?, ?, ?)
                    ON CONFLICT(deviceId, bundleId) DO UPDATE SET
                        activitiesEnabled = excluded.activitiesEnabled, frequentUpdates = excluded.frequentUpdates
                    """,
                arguments: [deviceId, bundleId, after.activitiesEnabled, after.frequentUpdates]
            )
            try log.record(.settingsChanged(after), bundleId: bundleId, deviceId: deviceId, activityId: nil, in: db)
            if before.activitiesEnabled, !after.activitiesEnabled {
                let shown = try ActivityRow.fetchAll(
                    db, sql: "SELECT body FROM activity WHERE deviceId = ? AND bundleId = ? AND state != 'dismissed'",
                    arguments: [deviceId, bundleId]
                )
                for var activity in shown {
                    let transition = try activity.handle(.appDisabled, now: now, rules: rules)
                    try ActivityRow.save(activity, now: now, in: db)
                    try log.record(transition, of: activity, in: db)
                }
            }
            return after
        }
    }

    static func settings(deviceId: DeviceID, bundleId: BundleID, in db: Database) throws -> AppSettings {
        let row = try Row.fetchOne(
            db, sql: "SELECT * FROM appSettings WHERE deviceId = ? AND bundleId = ?", arguments: [deviceId, bundleId]
        )
        var settings = AppSettings(bundleId: bundleId, deviceId: deviceId)
        if let row {
            settings.activitiesEnabled = row["activitiesEnabled"]
            settings.frequentUpdates = row["frequentUpdates"]
        }
        settings.pushToStartToken = try PushTokens.currentPushToStart(deviceId: deviceId, bundleId: bundleId, db: db)
        return settings
    }

    private static func requireDevice(_ deviceId: DeviceID, in db: Database) throws {
        guard try Bool.fetchOne(db, sql: "SELECT 1 FROM device WHERE id = ?", arguments: [deviceId]) != nil else {
            throw IsletError(.deviceNotFound, "No device \(deviceId).")
        }
    }
}
