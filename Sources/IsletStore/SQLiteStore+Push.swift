import Foundation
import GRDB
import IsletCore

extension SQLiteStore {
    // MARK: Tokens

    /// What a push token belongs to.
    public func lookup(token: String) async throws -> TokenLookup {
        try await read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM pushToken WHERE token = ?", arguments: [token]) else {
                return .unknown
            }
            let bundleId: String = row["bundleId"]
            if let retiredAt: Double = row["retiredAt"] {
                return .retired(at: Date(timeIntervalSince1970: retiredAt), reason: row["retiredReason"] ?? "", bundleId: bundleId)
            }
            if row["kind"] == "pushToStart" {
                return .pushToStart(row["deviceId"], bundleId: bundleId)
            }
            return .activity(row["activityId"], bundleId: bundleId)
        }
    }

    /// Gives an activity a new push token; the old one answers 410 from now on.
    public func rotateToken(of id: ActivityID, owner: BundleID?, now: Date) async throws -> Outcome {
        try await write(now: now) { db, log in
            var activity = try ActivityRow.fetch(id: id, owner: owner, in: db)
            guard activity.pushType == .token, activity.state != .dismissed else {
                throw IsletError(.invalidRequest, "Activity \(id) has no push token to rotate (its pushType is not \"token\", or it is dismissed).")
            }
            let transition = try PushTokens.rotateActivityToken(&activity, now: now, db: db, log: &log)
            return Outcome(activity: activity, transition: transition, created: false)
        }
    }

    /// Gives a device a new push-to-start token for an app; the old one answers 410 from now on.
    public func rotatePushToStartToken(deviceId: DeviceID, bundleId: BundleID, now: Date) async throws -> String {
        try await write(now: now) { db, log in
            guard try PushTokens.currentPushToStart(deviceId: deviceId, bundleId: bundleId, db: db) != nil else {
                throw IsletError(.deviceNotFound, "No device \(deviceId) with app \(bundleId).")
            }
            return try PushTokens.issuePushToStart(deviceId: deviceId, bundleId: bundleId, now: now, db: db, log: &log)
        }
    }

    /// Rotates every live activity's token and every push-to-start token: the optional schedule.
    /// - Returns: How many tokens were rotated.
    public func rotateAllTokens(now: Date) async throws -> Int {
        try await write(now: now) { db, log in
            var rotated = 0
            let activities = try ActivityRow.fetchAll(
                db, sql: "SELECT body FROM activity WHERE state IN \(ActivityRow.liveStates) AND json_extract(body, '$.pushToken') IS NOT NULL"
            )
            for var activity in activities {
                _ = try PushTokens.rotateActivityToken(&activity, now: now, db: db, log: &log)
                rotated += 1
            }
            let pairs = try Row.fetchAll(
                db, sql: "SELECT deviceId, bundleId FROM pushToken WHERE kind = 'pushToStart' AND retiredAt IS NULL"
            )
            for pair in pairs {
                try PushTokens.issuePushToStart(deviceId: pair["deviceId"], bundleId: pair["bundleId"], now: now, db: db, log: &log)
                rotated += 1
            }
            return rotated
        }
    }

    // MARK: Pushes

    /// Applies a push to an activity as its device would: applied, or dropped and recorded.
    ///
    /// - Parameters:
    ///   - change: The update or end the push carries.
    ///   - priority: The push's `apns-priority`; priority 10 spends the activity's budget.
    ///   - id: The activity its token belongs to.
    ///   - now: The current time.
    public func push(_ change: Activity.PushedChange, priority: Int, to id: ActivityID, now: Date) async throws -> Outcome {
        let rules = self.rules
        return try await write(now: now) { db, log in
            var activity = try ActivityRow.fetch(id: id, owner: nil, in: db)
            let settings = try Self.settings(deviceId: activity.deviceId, bundleId: activity.bundleId, in: db)
            let delivery = Activity.PushDelivery(
                budgetPerHour: rules.pushBudget(priority: priority, frequentUpdates: settings.frequentUpdates)
            )
            let type = try ActivityTypes.fetch(bundleId: activity.bundleId, name: activity.attributesType, db: db)
            let transition = try activity.handle(.push(change, delivery), now: now, rules: rules, type: type)
            try ActivityRow.save(activity, now: now, in: db)
            try log.record(transition, of: activity, in: db)
            return Outcome(activity: activity, transition: transition, created: false)
        }
    }

    /// What a push-to-start did: started an activity, or was dropped by the device with a reason.
    public enum PushStartOutcome: Sendable {
        case started(Outcome)
        case ignored(IgnoreReason, message: String)
    }

    /// Starts an activity by push-to-start, as the device would; a start the device would refuse
    /// is dropped and recorded as a device-level `updateIgnored` event (`action: "start"`).
    public func pushToStart(_ start: PushStart, bundleId: BundleID, now: Date) async throws -> PushStartOutcome {
        let rules = self.rules
        return try await write(now: now) { db, log in
            do {
                return .started(try Self.start(start.request, bundleId: bundleId, key: nil, now: now, rules: rules, db: db, log: &log))
            } catch let refusal as IsletError {
                guard let reason = IgnoreReason(refusal: refusal) else { throw refusal }
                let ignored = IgnoredUpdate(
                    reason: reason, action: "start", content: start.request.content, timestamp: start.timestamp ?? now,
                    lastUpdateTimestamp: nil, message: refusal.message
                )
                try log.record(.updateIgnored(ignored), bundleId: bundleId, deviceId: start.request.deviceId, activityId: nil, in: db)
                return .ignored(reason, message: refusal.message)
            }
        }
    }

    /// Records a push a device could not use, on its activity (or, with no activity, on the
    /// device), changing nothing else.
    public func recordIgnoredPush(
        _ ignored: IgnoredUpdate, bundleId: BundleID, deviceId: DeviceID, activityId: ActivityID?, now: Date
    ) async throws {
        try await write(now: now) { db, log in
            try log.record(.updateIgnored(ignored), bundleId: bundleId, deviceId: deviceId, activityId: activityId, in: db)
        }
    }

    // MARK: Channels

    /// Creates a broadcast channel; an app holds at most `limit`.
    public func createChannel(bundleId: BundleID, storagePolicy: Int, limit: Int, now: Date) async throws -> BroadcastChannel {
        try await write(now: now) { db, _ in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM app WHERE bundleId = ?", arguments: [bundleId]) != nil else {
                throw IsletError(.appNotFound, "No app \(bundleId).")
            }
            let count = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM channel WHERE bundleId = ?", arguments: [bundleId]) ?? 0
            guard count < limit else {
                throw IsletError(.invalidRequest, "\(bundleId) already has \(count) channels; the limit is \(limit).")
            }
            // Random base64, as APNs issues them; drawn without "/" and "+" so an id also reads
            // well in a URL path.
            var generator = SystemRandomNumberGenerator()
            var id: String
            repeat {
                id = Data((0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }).base64EncodedString()
            } while id.contains("/") || id.contains("+")
            let channel = BroadcastChannel(id: id, bundleId: bundleId, storagePolicy: storagePolicy, createdAt: now)
            try db.execute(
                sql: "INSERT INTO channel (id, bundleId, storagePolicy, createdAt) VALUES (?, ?, ?, ?)",
                arguments: [id, bundleId, storagePolicy, now.timeIntervalSince1970]
            )
            return channel
        }
    }

    /// One channel of an app.
    public func channel(_ id: String, bundleId: BundleID) async throws -> BroadcastChannel? {
        try await read { db in try Channels.fetch(id, bundleId: bundleId, db: db) }
    }

    /// Every channel of an app.
    public func channels(bundleId: BundleID) async throws -> [BroadcastChannel] {
        try await read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM channel WHERE bundleId = ? ORDER BY createdAt, id", arguments: [bundleId])
                .map(Channels.channel(from:))
        }
    }

    /// Deletes a channel, for good. Activities started with it receive nothing more.
    /// - Returns: Whether it existed.
    public func deleteChannel(_ id: String, bundleId: BundleID) async throws -> Bool {
        try await write { db in
            try db.execute(sql: "DELETE FROM channel WHERE id = ? AND bundleId = ?", arguments: [id, bundleId])
            return db.changesCount > 0
        }
    }

    /// Delivers a broadcast push to every live activity started with the channel, and keeps it
    /// for later joiners when the channel's policy says so.
    /// - Returns: What the push did to each activity.
    public func broadcast(
        _ change: Activity.PushedChange, channel: BroadcastChannel, storeUntil: Date?, now: Date
    ) async throws -> [Outcome] {
        let rules = self.rules
        return try await write(now: now) { db, log in
            if let storeUntil {
                try db.execute(
                    sql: "UPDATE channel SET message = ?, messageAt = ?, messageExpiresAt = ? WHERE id = ?",
                    arguments: [
                        try WireFormat.string(change), now.timeIntervalSince1970, storeUntil.timeIntervalSince1970, channel.id,
                    ]
                )
            }
            let listeners = try ActivityRow.fetchAll(
                db,
                sql: "SELECT body FROM activity WHERE channelId = ? AND bundleId = ? AND state IN \(ActivityRow.liveStates)",
                arguments: [channel.id, channel.bundleId]
            )
            var outcomes: [Outcome] = []
            for var activity in listeners {
                let type = try ActivityTypes.fetch(bundleId: activity.bundleId, name: activity.attributesType, db: db)
                let transition = try activity.handle(.push(change, Activity.PushDelivery(budgetPerHour: nil)), now: now, rules: rules, type: type)
                try ActivityRow.save(activity, now: now, in: db)
                try log.record(transition, of: activity, in: db)
                outcomes.append(Outcome(activity: activity, transition: transition, created: false))
            }
            return outcomes
        }
    }

    // MARK: Provider keys and activity types

    /// Registers (or replaces) a provider key for an app.
    public func addProviderKey(_ key: ProviderKey) async throws {
        try await write(now: key.createdAt) { db, _ in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM app WHERE bundleId = ?", arguments: [key.bundleId]) != nil else {
                throw IsletError(.appNotFound, "No app \(key.bundleId).")
            }
            try db.execute(
                sql: """
                    INSERT INTO providerKey (keyId, teamId, bundleId, publicKey, createdAt) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT(keyId, bundleId) DO UPDATE SET teamId = excluded.teamId, publicKey = excluded.publicKey,
                        createdAt = excluded.createdAt
                    """,
                arguments: [key.keyId, key.teamId, key.bundleId, key.publicKey, key.createdAt.timeIntervalSince1970]
            )
        }
    }

    /// Provider keys, of one app or with one key id.
    public func providerKeys(bundleId: BundleID? = nil, keyId: String? = nil) async throws -> [ProviderKey] {
        try await read { db in
            var sql = "SELECT * FROM providerKey WHERE 1"
            var arguments: [any DatabaseValueConvertible] = []
            if let bundleId {
                sql += " AND bundleId = ?"
                arguments.append(bundleId)
            }
            if let keyId {
                sql += " AND keyId = ?"
                arguments.append(keyId)
            }
            return try Row.fetchAll(db, sql: sql + " ORDER BY bundleId, keyId", arguments: StatementArguments(arguments)).map { row in
                ProviderKey(
                    keyId: row["keyId"], teamId: row["teamId"], bundleId: row["bundleId"], publicKey: row["publicKey"],
                    createdAt: Date(timeIntervalSince1970: row["createdAt"])
                )
            }
        }
    }

    /// Removes a provider key from an app.
    public func deleteProviderKey(keyId: String, bundleId: BundleID) async throws {
        try await write { db in
            try db.execute(sql: "DELETE FROM providerKey WHERE keyId = ? AND bundleId = ?", arguments: [keyId, bundleId])
            guard db.changesCount > 0 else {
                throw IsletError(.keyNotFound, "No key \(keyId) for \(bundleId).")
            }
        }
    }

    /// Registers (or replaces) an activity type's shapes.
    public func putActivityType(_ type: ActivityType) async throws {
        try await write { db in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM app WHERE bundleId = ?", arguments: [type.bundleId]) != nil else {
                throw IsletError(.appNotFound, "No app \(type.bundleId).")
            }
            try db.execute(
                sql: """
                    INSERT INTO activityType (bundleId, name, body) VALUES (?, ?, ?)
                    ON CONFLICT(bundleId, name) DO UPDATE SET body = excluded.body
                    """,
                arguments: [type.bundleId, type.name, try WireFormat.string(type)]
            )
        }
    }

    /// An app's registered activity types.
    public func activityTypes(bundleId: BundleID) async throws -> [ActivityType] {
        try await read { db in
            try String.fetchAll(db, sql: "SELECT body FROM activityType WHERE bundleId = ? ORDER BY name", arguments: [bundleId])
                .map { try WireFormat.decoder().decode(ActivityType.self, from: Data($0.utf8)) }
        }
    }
}
