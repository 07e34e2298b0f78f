import Foundation
import IsletCore
import IsletEngine

/// The engine's writes as SQL, written once for both databases. A store's transaction adds
/// only what its shape makes its own: how an activity's row is saved (`save`) and when events
/// are numbered (`append`) — SQLite at once, by its single writer; PostgreSQL at commit, when
/// several writers commit together (docs/cluster.md, "Event ids").
public protocol SQLWriting: SQLReading, Transaction {}

extension SQLWriting {
    // MARK: Apps, devices, settings, keys

    public func insertApp(_ app: App) throws {
        try session.execute(
            "INSERT INTO app (bundleId, name, createdAt, strictPushes, deliveryPaused) VALUES ($1, $2, $3, $4, $5)",
            [app.bundleId, app.name, app.createdAt.timeIntervalSince1970, app.strictPushes, app.deliveryPaused]
        )
    }

    public func updateApp(_ app: App) throws {
        try session.execute(
            "UPDATE app SET strictPushes = $1, deliveryPaused = $2 WHERE bundleId = $3", [app.strictPushes, app.deliveryPaused, app.bundleId]
        )
    }

    public func insertDevice(_ device: Device) throws {
        try session.execute(
            "INSERT INTO device (id, name, createdAt, platform) VALUES ($1, $2, $3, $4)",
            [device.id, device.name, device.createdAt.timeIntervalSince1970, device.platform.rawValue]
        )
    }

    public func putSettings(_ settings: AppSettings) throws {
        try session.execute(
            """
            INSERT INTO appSettings (deviceId, bundleId, activitiesEnabled, frequentUpdates) VALUES ($1, $2, $3, $4)
            ON CONFLICT (deviceId, bundleId) DO UPDATE SET
                activitiesEnabled = excluded.activitiesEnabled, frequentUpdates = excluded.frequentUpdates
            """,
            [settings.deviceId, settings.bundleId, settings.activitiesEnabled, settings.frequentUpdates]
        )
    }

    public func replaceKeys(of owner: KeyOwner, hash: String) throws {
        // One owner's keys are replaced one change at a time, so it is left with one.
        try session.lock("keys:\(owner)")
        let (bundleId, deviceId): (BundleID?, DeviceID?)
        switch owner {
        case .admin:
            (bundleId, deviceId) = (nil, nil)
            try session.execute("DELETE FROM apiKey WHERE bundleId IS NULL AND deviceId IS NULL", [])
        case .app(let app):
            (bundleId, deviceId) = (app, nil)
            // Its own key, not its installations' (docs/installations.md), which have a device too.
            try session.execute("DELETE FROM apiKey WHERE bundleId = $1 AND deviceId IS NULL", [app])
        case .device(let device):
            (bundleId, deviceId) = (nil, device)
            try session.execute("DELETE FROM apiKey WHERE deviceId = $1", [device])
        case .installation(let installation, let app):
            (bundleId, deviceId) = (app, installation)
            try session.execute("DELETE FROM apiKey WHERE deviceId = $1", [installation])
        case .client:
            // Kept in clientKey, each key a row of its own (`insertClientKey`).
            throw IsletError(.internalError, "A client key is not replaced; it is made and revoked.")
        }
        // Nodes that start together on a new database each store the admin key they share: a
        // key is 32 random bytes, so a hash already stored is the same key, for the same owner,
        // and the later insert changes nothing rather than fail.
        try session.execute(
            "INSERT INTO apiKey (hash, bundleId, deviceId, createdAt) VALUES ($1, $2, $3, $4) ON CONFLICT (hash) DO NOTHING",
            [hash, bundleId, deviceId, now.timeIntervalSince1970]
        )
    }

    // MARK: Layouts, types, provider keys, channels

    public func putLayout(_ record: LayoutRecord) throws {
        try session.execute(
            """
            INSERT INTO layout (bundleId, attributesType, body, revision, updatedAt) VALUES ($1, $2, $3, $4, $5)
            ON CONFLICT (bundleId, attributesType) DO UPDATE SET
                body = excluded.body, revision = excluded.revision, updatedAt = excluded.updatedAt
            """,
            [record.bundleId, record.attributesType, try WireFormat.string(record.layout), record.revision, record.updatedAt.timeIntervalSince1970]
        )
    }

    public func deleteLayout(bundleId: BundleID, attributesType: String) throws -> Bool {
        try session.count("DELETE FROM layout WHERE bundleId = $1 AND attributesType = $2", [bundleId, attributesType]) > 0
    }

    public func putActivityType(_ type: ActivityType) throws {
        session.cache.activityTypes[TransactionCache.typeKey(bundleId: type.bundleId, name: type.name)] = nil
        try session.execute(
            "INSERT INTO activityType (bundleId, name, body) VALUES ($1, $2, $3) ON CONFLICT (bundleId, name) DO UPDATE SET body = excluded.body",
            [type.bundleId, type.name, try WireFormat.string(type)]
        )
    }

    public func putProviderKey(_ key: ProviderKey) throws {
        try session.execute(
            """
            INSERT INTO providerKey (keyId, teamId, bundleId, publicKey, createdAt, kind, environment) VALUES ($1, $2, $3, $4, $5, $6, $7)
            ON CONFLICT (keyId, bundleId) DO UPDATE SET teamId = excluded.teamId, publicKey = excluded.publicKey,
                createdAt = excluded.createdAt, kind = excluded.kind, environment = excluded.environment
            """,
            [
                key.keyId, key.teamId, key.bundleId, key.publicKey, key.createdAt.timeIntervalSince1970, key.kind.rawValue,
                key.environment?.rawValue,
            ]
        )
    }

    public func deleteProviderKey(keyId: String, bundleId: BundleID) throws -> Bool {
        try session.count("DELETE FROM providerKey WHERE keyId = $1 AND bundleId = $2", [keyId, bundleId]) > 0
    }

    public func insertChannel(_ channel: BroadcastChannel) throws {
        try session.execute(
            "INSERT INTO channel (id, bundleId, storagePolicy, createdAt, environment) VALUES ($1, $2, $3, $4, $5)",
            [channel.id, channel.bundleId, channel.storagePolicy, channel.createdAt.timeIntervalSince1970, channel.environment?.rawValue]
        )
    }

    public func deleteChannel(_ id: String, bundleId: BundleID) throws -> Bool {
        try session.count("DELETE FROM channel WHERE id = $1 AND bundleId = $2", [id, bundleId]) > 0
    }

    public func storeMessage(_ change: Activity.PushedChange, channelId: String, expires: Date) throws {
        try session.execute(
            "UPDATE channel SET message = $1, messageAt = $2, messageExpiresAt = $3 WHERE id = $4",
            [try WireFormat.string(change), now.timeIntervalSince1970, expires.timeIntervalSince1970, channelId]
        )
    }

    // MARK: Tokens

    public func addToken(_ token: String, holder: TokenHolder) throws {
        switch holder {
        case .activity(let activityId, let deviceId, let bundleId):
            try session.execute(
                "INSERT INTO pushToken (token, kind, activityId, deviceId, bundleId, createdAt) VALUES ($1, 'activity', $2, $3, $4, $5)",
                [token, activityId, deviceId, bundleId, now.timeIntervalSince1970]
            )
        case .pushToStart(let deviceId, let bundleId):
            try session.execute(
                "INSERT INTO pushToken (token, kind, deviceId, bundleId, createdAt) VALUES ($1, 'pushToStart', $2, $3, $4)",
                [token, deviceId, bundleId, now.timeIntervalSince1970]
            )
        case .fcm(let deviceId, let bundleId):
            try session.execute(
                "INSERT INTO pushToken (token, kind, deviceId, bundleId, createdAt) VALUES ($1, 'fcm', $2, $3, $4)",
                [token, deviceId, bundleId, now.timeIntervalSince1970]
            )
        case .fid(let deviceId, let bundleId):
            try session.execute(
                "INSERT INTO pushToken (token, kind, deviceId, bundleId, createdAt) VALUES ($1, 'fid', $2, $3, $4)",
                [token, deviceId, bundleId, now.timeIntervalSince1970]
            )
        }
    }

    public func retireTokens(of holder: TokenHolder, reason: TokenRetirement) throws {
        switch holder {
        case .activity(let activityId, _, _):
            try session.execute(
                "UPDATE pushToken SET retiredAt = $1, retiredReason = $2 WHERE kind = 'activity' AND activityId = $3 AND retiredAt IS NULL",
                [reason.at.timeIntervalSince1970, reason.reason, activityId]
            )
        case .pushToStart(let deviceId, let bundleId):
            try retireDeviceTokens(kind: "pushToStart", deviceId: deviceId, bundleId: bundleId, reason: reason)
        case .fcm(let deviceId, let bundleId):
            try retireDeviceTokens(kind: "fcm", deviceId: deviceId, bundleId: bundleId, reason: reason)
        case .fid(let deviceId, let bundleId):
            try retireDeviceTokens(kind: "fid", deviceId: deviceId, bundleId: bundleId, reason: reason)
        }
    }

    /// Retires a device's tokens of a kind for an app.
    private func retireDeviceTokens(kind: String, deviceId: DeviceID, bundleId: BundleID, reason: TokenRetirement) throws {
        // A holder's tokens are replaced one change at a time, so it is left with one.
        try session.lock("\(kind):\(deviceId):\(bundleId)")
        try session.execute(
            """
            UPDATE pushToken SET retiredAt = $1, retiredReason = $2
            WHERE kind = $3 AND deviceId = $4 AND bundleId = $5 AND retiredAt IS NULL
            """,
            [reason.at.timeIntervalSince1970, reason.reason, kind, deviceId, bundleId]
        )
    }

    // MARK: Retention

    public func purge(before date: Date, limit: Int) throws -> PurgeCount {
        // Activities kept as read may be among those deleted.
        session.cache.activities = [:]
        let cutoff = date.timeIntervalSince1970
        // The oldest dismissed activities, the same rows for each statement: what was delivered
        // to a phone for them goes first, the activities last.
        let activities = "SELECT id FROM activity WHERE state = 'dismissed' AND updatedAt < $1 ORDER BY updatedAt, id LIMIT $2"
        let orderKeys = "SELECT 'activity:' || id FROM activity WHERE state = 'dismissed' AND updatedAt < $1 ORDER BY updatedAt, id LIMIT $2"
        var deliveries = try session.count(
            "DELETE FROM delivery WHERE orderKey IN (\(orderKeys)) AND state IN ('pending', 'sending', 'held')", [cutoff, limit]
        )
        try session.execute("DELETE FROM phoneActivity WHERE activityId IN (\(activities))", [cutoff, limit])
        try session.execute("DELETE FROM androidNotification WHERE activityId IN (\(activities))", [cutoff, limit])
        try session.execute("DELETE FROM fcmAccessToken WHERE expiresAt < $1", [cutoff])
        let phoneTokens = try session.count("DELETE FROM phoneToken WHERE activityId IN (\(activities))", [cutoff, limit])
        let activityCount = try session.count("DELETE FROM activity WHERE id IN (\(activities))", [cutoff, limit])
        // Finished deliveries, oldest first (their log lines are events, deleted below).
        deliveries += try session.count(
            "DELETE FROM delivery WHERE id IN (\(SQLQueries.finishedDeliveries))", [cutoff, limit]
        )
        return PurgeCount(
            activities: activityCount,
            events: try session.count("DELETE FROM event WHERE id IN (SELECT id FROM event WHERE time < $1 ORDER BY id LIMIT $2)", [cutoff, limit]),
            tokens: try session.count("DELETE FROM pushToken WHERE token IN (SELECT token FROM pushToken WHERE retiredAt < $1 LIMIT $2)", [cutoff, limit])
                + phoneTokens
                + session.count("DELETE FROM phoneToken WHERE token IN (SELECT token FROM phoneToken WHERE retiredAt < $1 LIMIT $2)", [cutoff, limit]),
            deliveries: deliveries,
            // The attempt log, as old as the events it is about.
            webhookAttempts: try session.count(
                "DELETE FROM webhookAttempt WHERE id IN (SELECT id FROM webhookAttempt WHERE at < $1 ORDER BY id LIMIT $2)", [cutoff, limit]
            )
        )
    }

    // MARK: Delivery to real phones

    public func putCredential(_ stored: StoredCredential) throws {
        let credential = stored.credential
        let topics = try credential.topics.map { String(decoding: try JSONEncoder().encode($0), as: UTF8.self) }
        try session.execute(
            """
            INSERT INTO deliveryCredential (
                bundleId, environment, teamId, keyId, privateKey, url, caCertificate, createdAt, failure, kind, topics, relatedKeyId
            )
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
            ON CONFLICT (bundleId, environment, keyId) DO UPDATE SET teamId = excluded.teamId,
                privateKey = excluded.privateKey, url = excluded.url, caCertificate = excluded.caCertificate,
                createdAt = excluded.createdAt, failure = excluded.failure, kind = excluded.kind, topics = excluded.topics,
                relatedKeyId = excluded.relatedKeyId
            """,
            [
                credential.bundleId, credential.environment.rawValue, credential.teamId, credential.keyId, stored.privateKey,
                credential.url, credential.caCertificate, credential.createdAt.timeIntervalSince1970, credential.failure,
                credential.kind.rawValue, topics, credential.relatedKeyId,
            ]
        )
    }

    public func deleteCredentials(bundleId: BundleID, environment: APNsEnvironment?, keyId: String?) throws -> Int {
        var conditions = SQLConditions()
        conditions.equal("bundleId", bundleId)
        conditions.equal("environment", environment?.rawValue)
        conditions.equal("keyId", keyId)
        return try session.count("DELETE FROM deliveryCredential \(conditions.whereClause)", conditions.values)
    }

    public func setCredentialFailure(bundleId: BundleID, environment: APNsEnvironment, keyId: String, failure: String?) throws {
        try session.execute(
            "UPDATE deliveryCredential SET failure = $1 WHERE bundleId = $2 AND environment = $3 AND keyId = $4",
            [failure, bundleId, environment.rawValue, keyId]
        )
    }

    public func putPhoneToken(_ token: PhoneToken) throws {
        try session.execute(
            """
            INSERT INTO phoneToken (token, kind, bundleId, deviceId, attributesType, activityId, environment, createdAt)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
            ON CONFLICT (token) DO UPDATE SET kind = excluded.kind, bundleId = excluded.bundleId, deviceId = excluded.deviceId,
                attributesType = excluded.attributesType, activityId = excluded.activityId, environment = excluded.environment,
                createdAt = excluded.createdAt, retiredAt = NULL, retiredReason = NULL, appleTimestamp = NULL,
                lastAt = NULL, lastStatus = NULL, lastReason = NULL
            """,
            [
                token.token, token.kind.rawValue, token.bundleId, token.deviceId, token.attributesType, token.activityId,
                token.environment.rawValue, token.createdAt.timeIntervalSince1970,
            ]
        )
    }

    public func retirePhoneTokens(_ holder: PhoneTokenHolder, reason: String) throws {
        switch holder {
        case .pushToStart(let deviceId, let bundleId, let attributesType): try session.lock("phonePushToStart:\(deviceId):\(bundleId):\(attributesType)")
        case .update: break
        case .fcm(let deviceId, let bundleId): try session.lock("phoneFCM:\(deviceId):\(bundleId)")
        }
        let (retire, retireValues) = Self.tokens(of: holder, after: 2)
        try session.execute(
            "UPDATE phoneToken SET retiredAt = $1, retiredReason = $2 WHERE \(retire) AND retiredAt IS NULL",
            [now.timeIntervalSince1970, reason] + retireValues
        )
        // A holder keeps its newest retired tokens only (`PhoneToken.retiredKept`): a phone, or a
        // hostile installation, that replaces its token again and again does not grow the store
        // until `store.retention` (docs/installations.md, "Limits").
        let (kept, keptValues) = Self.tokens(of: holder, after: 0)
        try session.execute(
            """
            DELETE FROM phoneToken WHERE token IN (
                SELECT token FROM phoneToken WHERE \(kept) AND retiredAt IS NOT NULL
                ORDER BY retiredAt DESC, token LIMIT 1000000 OFFSET \(PhoneToken.retiredKept)
            )
            """,
            keptValues
        )
    }

    /// The condition on `phoneToken` that picks a holder's tokens, its parameters numbered from `after + 1`.
    private static func tokens(of holder: PhoneTokenHolder, after n: Int) -> (String, [(any SQLBindable)?]) {
        switch holder {
        case .pushToStart(let deviceId, let bundleId, let attributesType):
            ("kind = 'pushToStart' AND deviceId = $\(n + 1) AND bundleId = $\(n + 2) AND attributesType = $\(n + 3)", [deviceId, bundleId, attributesType])
        case .update(let activityId): ("kind = 'update' AND activityId = $\(n + 1)", [activityId])
        case .fcm(let deviceId, let bundleId): ("kind IN ('fcm', 'fid') AND deviceId = $\(n + 1) AND bundleId = $\(n + 2)", [deviceId, bundleId])
        }
    }

    public func retirePhoneToken(_ token: String, reason: String, appleTimestamp: Date?) throws {
        try session.execute(
            "UPDATE phoneToken SET retiredAt = $1, retiredReason = $2, appleTimestamp = $3 WHERE token = $4 AND retiredAt IS NULL",
            [now.timeIntervalSince1970, reason, appleTimestamp?.timeIntervalSince1970, token]
        )
    }

    public func recordTokenResult(_ token: String, at date: Date, status: Int, reason: String?) throws {
        try session.execute(
            "UPDATE phoneToken SET lastAt = $1, lastStatus = $2, lastReason = $3 WHERE token = $4", [date.timeIntervalSince1970, status, reason, token]
        )
    }

    public func putPhoneActivity(_ phone: PhoneActivity) throws {
        session.cache.phoneActivities[phone.activityId] = .some(phone)
        try session.execute(
            """
            INSERT INTO phoneActivity (activityId, bundleId, deviceId, environment, channelId, state, budgeted, platform)
            VALUES ($1, $2, $3, $4, $5, $6, '', $7)
            ON CONFLICT (activityId) DO UPDATE SET environment = excluded.environment, channelId = excluded.channelId,
                state = excluded.state, platform = excluded.platform
            """,
            [
                phone.activityId, phone.bundleId, phone.deviceId, phone.environment.rawValue, phone.channelId, phone.state.rawValue,
                phone.platform.rawValue,
            ]
        )
    }

    public func lockedPhoneBudget(deviceId: DeviceID, bundleId: BundleID) throws -> [Date] {
        try session.lock("phoneBudget:\(deviceId):\(bundleId)")
        return try phoneBudget(deviceId: deviceId, bundleId: bundleId)
    }

    public func putPhoneBudget(deviceId: DeviceID, bundleId: BundleID, sends: [Date]) throws {
        try session.execute(
            """
            INSERT INTO phoneBudget (deviceId, bundleId, budgeted) VALUES ($1, $2, $3)
            ON CONFLICT (deviceId, bundleId) DO UPDATE SET budgeted = excluded.budgeted
            """,
            [deviceId, bundleId, SQLRows.text(dates: sends)]
        )
    }

    public func insertDelivery(_ delivery: Delivery) throws -> Int64 {
        try session.insert(
            """
            INSERT INTO delivery (orderKey, activityId, bundleId, deviceId, channelId, event, payload, alert, expiration, state,
                attempts, nextAttemptAt, leaseUntil, createdAt, finishedAt, apnsId, traceparent)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
            """,
            [
                delivery.order.key, delivery.activityId, delivery.bundleId, delivery.deviceId, delivery.channelId, delivery.event.rawValue,
                delivery.payload, delivery.alert, delivery.expiration?.timeIntervalSince1970, delivery.state.rawValue,
                delivery.attempts, delivery.nextAttemptAt.timeIntervalSince1970, delivery.leaseUntil?.timeIntervalSince1970,
                delivery.createdAt.timeIntervalSince1970, delivery.finishedAt?.timeIntervalSince1970, delivery.apnsId,
                delivery.traceparent,
            ]
        )
    }

    public func updateDelivery(_ delivery: Delivery) throws {
        try session.execute(
            "UPDATE delivery SET state = $1, attempts = $2, nextAttemptAt = $3, leaseUntil = $4, finishedAt = $5 WHERE id = $6",
            [
                delivery.state.rawValue, delivery.attempts, delivery.nextAttemptAt.timeIntervalSince1970,
                delivery.leaseUntil?.timeIntervalSince1970, delivery.finishedAt?.timeIntervalSince1970, delivery.id,
            ]
        )
    }
}

/// An activity as its row stores it: the whole activity as JSON, plus the columns queries use.
public struct ActivityColumns: Sendable {
    public var id: ActivityID
    public var bundleId: BundleID
    public var deviceId: DeviceID
    public var attributesType: String
    public var state: String
    public var key: String?
    public var deadline: Double?
    public var relevanceScore: Double
    public var startTime: Double
    public var createdAt: Double
    public var updatedAt: Double
    public var body: String
    public var channelId: String?

    /// An activity's row as written at `now`.
    public init(_ activity: Activity, now: Date) throws {
        id = activity.id
        bundleId = activity.bundleId
        deviceId = activity.deviceId
        attributesType = activity.attributesType
        state = activity.state.rawValue
        key = activity.key
        deadline = activity.nextDeadline?.timeIntervalSince1970
        relevanceScore = activity.content.relevanceScore
        startTime = (activity.startedAt ?? activity.scheduledStart ?? activity.createdAt).timeIntervalSince1970
        createdAt = activity.createdAt.timeIntervalSince1970
        updatedAt = now.timeIntervalSince1970
        body = try WireFormat.string(activity)
        channelId = activity.channelId
    }

    /// The columns `upsert` writes, in its placeholders' order.
    public static let columns = "id, bundleId, deviceId, attributesType, state, key, deadline, relevanceScore, startTime, createdAt, updatedAt, body, channelId"

    /// What is set when the row exists: everything the engine changes. A new content keeps
    /// every indexed value as it was, and the database then need not touch an index.
    public static let onConflict = """
        ON CONFLICT (id) DO UPDATE SET state = excluded.state, deadline = excluded.deadline,
            relevanceScore = excluded.relevanceScore, startTime = excluded.startTime, updatedAt = excluded.updatedAt,
            body = excluded.body
        """

    /// Inserts or saves one activity's row.
    public static let upsert = "INSERT INTO activity (\(columns)) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) \(onConflict)"

    /// The values of `upsert`.
    public var values: [(any SQLBindable)?] {
        [id, bundleId, deviceId, attributesType, state, key, deadline, relevanceScore, startTime, createdAt, updatedAt, body, channelId]
    }
}
