import Foundation
import GRDB
import IsletCore
import IsletEngine

/// One use case's savepoint in a write transaction: the engine's writes as SQL, and what they
/// add to the commit (events, the earliest deadline, effects).
final class SQLiteTransaction: SQLiteReading, Transaction {
    let db: Database
    let now: Date
    var effects = Effects()
    private(set) var events: [EncodedEvent] = []
    private(set) var earliestDeadline: Date?

    init(db: Database, now: Date) {
        self.db = db
        self.now = now
    }

    // MARK: Activities and events

    @discardableResult
    func save(_ activity: Activity) throws -> String {
        if let deadline = activity.nextDeadline {
            earliestDeadline = min(earliestDeadline ?? deadline, deadline)
        }
        return try ActivityRow.save(activity, now: now, in: db)
    }

    func append(_ payload: EventPayload, bundleId: BundleID, deviceId: DeviceID, activityId: ActivityID?) throws {
        let data = payload.encodedData()
        try db.cachedStatement(sql: ChangeStatements.insertEvent)
            .execute(arguments: [now.timeIntervalSince1970, payload.type.rawValue, bundleId, deviceId, activityId, data])
        let id = db.lastInsertedRowID
        if let activityId {
            try db.cachedStatement(sql: ChangeStatements.linkEvent).execute(arguments: [id, activityId])
        }
        let event = EncodedEvent(
            id: id, type: payload.type, time: now, bundleId: bundleId, deviceId: deviceId,
            activityId: activityId, dataJSON: data
        )
        events.append(event)
    }

    // MARK: Apps, devices, settings, keys

    func insertApp(_ app: App) throws {
        try db.execute(
            sql: "INSERT INTO app (bundleId, name, createdAt, strictPushes, deliveryPaused) VALUES (?, ?, ?, ?, ?)",
            arguments: [app.bundleId, app.name, app.createdAt.timeIntervalSince1970, app.strictPushes, app.deliveryPaused]
        )
    }

    func updateApp(_ app: App) throws {
        try db.execute(
            sql: "UPDATE app SET strictPushes = ?, deliveryPaused = ? WHERE bundleId = ?",
            arguments: [app.strictPushes, app.deliveryPaused, app.bundleId]
        )
    }

    func insertDevice(_ device: Device) throws {
        try db.execute(
            sql: "INSERT INTO device (id, name, createdAt) VALUES (?, ?, ?)",
            arguments: [device.id, device.name, device.createdAt.timeIntervalSince1970]
        )
    }

    func putSettings(_ settings: AppSettings) throws {
        try db.execute(
            sql: """
                INSERT INTO appSettings (deviceId, bundleId, activitiesEnabled, frequentUpdates) VALUES (?, ?, ?, ?)
                ON CONFLICT(deviceId, bundleId) DO UPDATE SET
                    activitiesEnabled = excluded.activitiesEnabled, frequentUpdates = excluded.frequentUpdates
                """,
            arguments: [settings.deviceId, settings.bundleId, settings.activitiesEnabled, settings.frequentUpdates]
        )
    }

    func replaceKeys(of owner: KeyOwner, hash: String) throws {
        let (bundleId, deviceId): (BundleID?, DeviceID?)
        switch owner {
        case .admin:
            (bundleId, deviceId) = (nil, nil)
            try db.execute(sql: "DELETE FROM apiKey WHERE bundleId IS NULL AND deviceId IS NULL")
        case .app(let app):
            (bundleId, deviceId) = (app, nil)
            try db.execute(sql: "DELETE FROM apiKey WHERE bundleId = ?", arguments: [app])
        case .device(let device):
            (bundleId, deviceId) = (nil, device)
            try db.execute(sql: "DELETE FROM apiKey WHERE deviceId = ?", arguments: [device])
        }
        try db.execute(
            sql: "INSERT INTO apiKey (hash, bundleId, deviceId, createdAt) VALUES (?, ?, ?, ?)",
            arguments: [hash, bundleId, deviceId, now.timeIntervalSince1970]
        )
    }

    // MARK: Layouts, types, provider keys, channels

    func putLayout(_ record: LayoutRecord) throws {
        try db.execute(
            sql: """
                INSERT INTO layout (bundleId, attributesType, body, revision, updatedAt) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT(bundleId, attributesType) DO UPDATE SET
                    body = excluded.body, revision = excluded.revision, updatedAt = excluded.updatedAt
                """,
            arguments: [
                record.bundleId, record.attributesType, try WireFormat.string(record.layout), record.revision,
                record.updatedAt.timeIntervalSince1970,
            ]
        )
    }

    func deleteLayout(bundleId: BundleID, attributesType: String) throws -> Bool {
        try db.execute(sql: "DELETE FROM layout WHERE bundleId = ? AND attributesType = ?", arguments: [bundleId, attributesType])
        return db.changesCount > 0
    }

    func putActivityType(_ type: ActivityType) throws {
        try db.execute(
            sql: """
                INSERT INTO activityType (bundleId, name, body) VALUES (?, ?, ?)
                ON CONFLICT(bundleId, name) DO UPDATE SET body = excluded.body
                """,
            arguments: [type.bundleId, type.name, try WireFormat.string(type)]
        )
    }

    func putProviderKey(_ key: ProviderKey) throws {
        try db.execute(
            sql: """
                INSERT INTO providerKey (keyId, teamId, bundleId, publicKey, createdAt) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT(keyId, bundleId) DO UPDATE SET teamId = excluded.teamId, publicKey = excluded.publicKey,
                    createdAt = excluded.createdAt
                """,
            arguments: [key.keyId, key.teamId, key.bundleId, key.publicKey, key.createdAt.timeIntervalSince1970]
        )
    }

    func deleteProviderKey(keyId: String, bundleId: BundleID) throws -> Bool {
        try db.execute(sql: "DELETE FROM providerKey WHERE keyId = ? AND bundleId = ?", arguments: [keyId, bundleId])
        return db.changesCount > 0
    }

    func insertChannel(_ channel: BroadcastChannel) throws {
        try db.execute(
            sql: "INSERT INTO channel (id, bundleId, storagePolicy, createdAt, environment) VALUES (?, ?, ?, ?, ?)",
            arguments: [
                channel.id, channel.bundleId, channel.storagePolicy, channel.createdAt.timeIntervalSince1970, channel.environment?.rawValue,
            ]
        )
    }

    func deleteChannel(_ id: String, bundleId: BundleID) throws -> Bool {
        try db.execute(sql: "DELETE FROM channel WHERE id = ? AND bundleId = ?", arguments: [id, bundleId])
        return db.changesCount > 0
    }

    func storeMessage(_ change: Activity.PushedChange, channelId: String, expires: Date) throws {
        try db.execute(
            sql: "UPDATE channel SET message = ?, messageAt = ?, messageExpiresAt = ? WHERE id = ?",
            arguments: [try WireFormat.string(change), now.timeIntervalSince1970, expires.timeIntervalSince1970, channelId]
        )
    }

    // MARK: Tokens

    func addToken(_ token: String, holder: TokenHolder) throws {
        switch holder {
        case .activity(let activityId, let deviceId, let bundleId):
            try db.execute(
                sql: "INSERT INTO pushToken (token, kind, activityId, deviceId, bundleId, createdAt) VALUES (?, 'activity', ?, ?, ?, ?)",
                arguments: [token, activityId, deviceId, bundleId, now.timeIntervalSince1970]
            )
        case .pushToStart(let deviceId, let bundleId):
            try db.execute(
                sql: "INSERT INTO pushToken (token, kind, deviceId, bundleId, createdAt) VALUES (?, 'pushToStart', ?, ?, ?)",
                arguments: [token, deviceId, bundleId, now.timeIntervalSince1970]
            )
        }
    }

    func retireTokens(of holder: TokenHolder, reason: TokenRetirement) throws {
        switch holder {
        case .activity(let activityId, _, _):
            try db.execute(
                sql: """
                    UPDATE pushToken SET retiredAt = ?, retiredReason = ?
                    WHERE kind = 'activity' AND activityId = ? AND retiredAt IS NULL
                    """,
                arguments: [reason.at.timeIntervalSince1970, reason.reason, activityId]
            )
        case .pushToStart(let deviceId, let bundleId):
            try db.execute(
                sql: """
                    UPDATE pushToken SET retiredAt = ?, retiredReason = ?
                    WHERE kind = 'pushToStart' AND deviceId = ? AND bundleId = ? AND retiredAt IS NULL
                    """,
                arguments: [reason.at.timeIntervalSince1970, reason.reason, deviceId, bundleId]
            )
        }
    }

    // MARK: Retention

    func purge(before date: Date) throws -> PurgeCount {
        let cutoff = date.timeIntervalSince1970
        try db.execute(sql: "DELETE FROM activity WHERE state = 'dismissed' AND updatedAt < ?", arguments: [cutoff])
        let activities = db.changesCount
        try db.execute(sql: "DELETE FROM event WHERE time < ?", arguments: [cutoff])
        let events = db.changesCount
        try db.execute(sql: "DELETE FROM pushToken WHERE retiredAt < ?", arguments: [cutoff])
        return PurgeCount(activities: activities, events: events, tokens: db.changesCount)
    }
}
