import Foundation
import GRDB
import IsletCore
import IsletEngine

/// The engine's reads as SQL over one connection: a reader's snapshot, or the writer's
/// transaction (which then sees its own writes).
protocol SQLiteReading: StoreReading {
    var db: Database { get }
}

/// Reads on a reader connection.
struct SQLiteSnapshot: SQLiteReading {
    let db: Database
}

extension SQLiteReading {
    // MARK: Apps and devices

    func app(_ bundleId: BundleID) throws -> App? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM app WHERE bundleId = ?"), arguments: [bundleId]).map(Self.app(from:))
    }

    func apps() throws -> [App] {
        try Row.fetchAll(db, sql: "SELECT * FROM app ORDER BY bundleId").map(Self.app(from:))
    }

    private static func app(from row: Row) -> App {
        App(
            bundleId: row["bundleId"], name: row["name"], createdAt: Date(timeIntervalSince1970: row["createdAt"]),
            strictPushes: row["strictPushes"], deliveryPaused: row["deliveryPaused"]
        )
    }

    func device(_ id: DeviceID) throws -> Device? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM device WHERE id = ?"), arguments: [id]).map(Self.device(from:))
    }

    func devices() throws -> [Device] {
        try Row.fetchAll(db, sql: "SELECT * FROM device ORDER BY id").map(Self.device(from:))
    }

    func devices(after id: DeviceID?, limit: Int) throws -> [Device] {
        try Row.fetchAll(db, sql: "SELECT * FROM device WHERE id > ? ORDER BY id LIMIT ?", arguments: [id ?? "", limit])
            .map(Self.device(from:))
    }

    private static func device(from row: Row) -> Device {
        Device(id: row["id"], name: row["name"], createdAt: Date(timeIntervalSince1970: row["createdAt"]))
    }

    func settings(deviceId: DeviceID, bundleId: BundleID) throws -> AppSettings {
        let row = try Row.fetchOne(
            db.cachedStatement(sql: "SELECT * FROM appSettings WHERE deviceId = ? AND bundleId = ?"), arguments: [deviceId, bundleId]
        )
        var settings = AppSettings(bundleId: bundleId, deviceId: deviceId)
        if let row {
            settings.activitiesEnabled = row["activitiesEnabled"]
            settings.frequentUpdates = row["frequentUpdates"]
        }
        settings.pushToStartToken = try pushToStartToken(deviceId: deviceId, bundleId: bundleId)
        return settings
    }

    func keyOwner(hash: String) throws -> KeyOwner? {
        guard let row = try Row.fetchOne(db, sql: "SELECT bundleId, deviceId FROM apiKey WHERE hash = ?", arguments: [hash]) else {
            return nil
        }
        if let bundleId: String = row["bundleId"] { return .app(bundleId) }
        if let deviceId: String = row["deviceId"] { return .device(deviceId) }
        return .admin
    }

    // MARK: Activities

    func activity(_ id: ActivityID) throws -> Activity? {
        try ActivityRow.fetch(id: id, in: db)
    }

    func activities(_ filter: ActivityFilter) throws -> [(activity: Activity, place: ActivityPlace)] {
        let (sql, arguments) = ActivityRow.listing(filter)
        let rows = try Row.fetchAll(db, sql: sql, arguments: arguments)
        let activities = try ActivityRow.decode(rows.map { $0["body"] })
        return zip(activities, rows).map { activity, row in
            (activity, ActivityPlace(score: row["relevanceScore"], start: row["startTime"], id: row["id"]))
        }
    }

    func activityIDs(prefix: String, bundleId: BundleID?, limit: Int) throws -> [ActivityID] {
        // "~" sorts after every character of an id: the range is exactly the ids with the prefix.
        var sql = "SELECT id FROM activity WHERE id >= ? AND id < ?"
        var arguments: StatementArguments = [prefix, prefix + "~"]
        if let bundleId {
            sql += " AND bundleId = ?"
            arguments += [bundleId]
        }
        return try String.fetchAll(db, sql: sql + " ORDER BY id LIMIT ?", arguments: arguments + [limit])
    }

    func liveActivity(key: String, bundleId: BundleID) throws -> Activity? {
        try ActivityRow.fetchAll(
            db,
            sql: """
                SELECT body FROM activity WHERE bundleId = ? AND key = ? AND state IN \(ActivityRow.liveStates)
                ORDER BY createdAt DESC LIMIT 1
                """,
            arguments: [bundleId, key]
        ).first
    }

    func liveActivityCount(deviceId: DeviceID, bundleId: BundleID?) throws -> Int {
        if let bundleId {
            return try Int.fetchOne(
                db.cachedStatement(
                    sql: "SELECT COUNT(*) FROM activity WHERE deviceId = ? AND bundleId = ? AND state IN \(ActivityRow.liveStates)"
                ),
                arguments: [deviceId, bundleId]
            ) ?? 0
        }
        return try Int.fetchOne(
            db.cachedStatement(sql: "SELECT COUNT(*) FROM activity WHERE deviceId = ? AND state IN \(ActivityRow.liveStates)"),
            arguments: [deviceId]
        ) ?? 0
    }

    func liveActivities(channelId: String, bundleId: BundleID) throws -> [Activity] {
        try ActivityRow.fetchAll(
            db,
            sql: "SELECT body FROM activity WHERE channelId = ? AND bundleId = ? AND state IN \(ActivityRow.liveStates)",
            arguments: [channelId, bundleId]
        )
    }

    func shownActivities(bundleId: BundleID, deviceId: DeviceID?, attributesType: String?) throws -> [Activity] {
        var sql = "SELECT body FROM activity WHERE bundleId = ? AND state != 'dismissed'"
        var arguments: StatementArguments = [bundleId]
        if let deviceId {
            sql += " AND deviceId = ?"
            arguments += [deviceId]
        }
        if let attributesType {
            sql += " AND attributesType = ?"
            arguments += [attributesType]
        }
        return try ActivityRow.fetchAll(db, sql: sql, arguments: arguments)
    }

    func liveActivitiesWithPushTokens() throws -> [Activity] {
        try ActivityRow.fetchAll(
            db, sql: "SELECT body FROM activity WHERE state IN \(ActivityRow.liveStates) AND json_extract(body, '$.pushToken') IS NOT NULL"
        )
    }

    func dueActivities(at date: Date, limit: Int) throws -> [Activity] {
        try ActivityRow.fetchAll(
            db, sql: "SELECT body FROM activity WHERE deadline <= ? ORDER BY deadline LIMIT ?",
            arguments: [date.timeIntervalSince1970, limit]
        )
    }

    func nextDeadline() throws -> Date? {
        try Double.fetchOne(db, sql: "SELECT MIN(deadline) FROM activity").map(Date.init(timeIntervalSince1970:))
    }

    func activityCounts(bundleId: BundleID?) throws -> [ActivityState: Int] {
        var counts = Dictionary(uniqueKeysWithValues: ActivityState.allCases.map { ($0, 0) })
        let rows =
            if let bundleId {
                try Row.fetchAll(db, sql: "SELECT state, COUNT(*) AS count FROM activity WHERE bundleId = ? GROUP BY state", arguments: [bundleId])
            } else {
                try Row.fetchAll(db, sql: "SELECT state, COUNT(*) AS count FROM activity GROUP BY state")
            }
        for row in rows {
            if let state = ActivityState(rawValue: row["state"]) {
                counts[state] = row["count"]
            }
        }
        return counts
    }

    func population(bundleId: BundleID?) throws -> Population {
        guard let bundleId else {
            let row = try Row.fetchOne(
                db,
                sql: """
                    SELECT (SELECT COUNT(*) FROM app) AS apps, (SELECT COUNT(*) FROM device) AS devices,
                        (SELECT COUNT(DISTINCT deviceId) FROM phoneToken WHERE retiredAt IS NULL) AS phones
                    """
            )
            return Population(apps: row?["apps"] ?? 0, devices: row?["devices"] ?? 0, phones: row?["phones"] ?? 0)
        }
        let row = try Row.fetchOne(
            db,
            sql: """
                SELECT (SELECT COUNT(*) FROM app WHERE bundleId = ?1) AS apps,
                    (SELECT COUNT(DISTINCT deviceId) FROM activity WHERE bundleId = ?1) AS devices,
                    (SELECT COUNT(DISTINCT deviceId) FROM phoneToken WHERE retiredAt IS NULL AND bundleId = ?1) AS phones
                """,
            arguments: [bundleId]
        )
        return Population(apps: row?["apps"] ?? 0, devices: row?["devices"] ?? 0, phones: row?["phones"] ?? 0)
    }

    // MARK: Types, layouts, provider keys, channels, tokens

    func activityType(bundleId: BundleID, name: String) throws -> ActivityType? {
        try String.fetchOne(
            db.cachedStatement(sql: "SELECT body FROM activityType WHERE bundleId = ? AND name = ?"), arguments: [bundleId, name]
        ).map { try WireFormat.decoder().decode(ActivityType.self, from: Data($0.utf8)) }
    }

    func activityTypes(bundleId: BundleID) throws -> [ActivityType] {
        try String.fetchAll(db, sql: "SELECT body FROM activityType WHERE bundleId = ? ORDER BY name", arguments: [bundleId])
            .map { try WireFormat.decoder().decode(ActivityType.self, from: Data($0.utf8)) }
    }

    func layout(bundleId: BundleID, attributesType: String) throws -> LayoutRecord? {
        try Row.fetchOne(
            db, sql: "SELECT * FROM layout WHERE bundleId = ? AND attributesType = ?", arguments: [bundleId, attributesType]
        ).map(Self.layoutRecord)
    }

    func layouts(bundleId: BundleID) throws -> [LayoutRecord] {
        try Row.fetchAll(db, sql: "SELECT * FROM layout WHERE bundleId = ? ORDER BY attributesType", arguments: [bundleId])
            .map(Self.layoutRecord)
    }

    private static func layoutRecord(_ row: Row) throws -> LayoutRecord {
        LayoutRecord(
            bundleId: row["bundleId"], attributesType: row["attributesType"],
            layout: try WireFormat.decoder().decode(JSONValue.self, from: Data((row["body"] as String).utf8)),
            revision: row["revision"], updatedAt: Date(timeIntervalSince1970: row["updatedAt"])
        )
    }

    func providerKeys(bundleId: BundleID?, keyId: String?) throws -> [ProviderKey] {
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

    func channel(_ id: String, bundleId: BundleID) throws -> BroadcastChannel? {
        try Row.fetchOne(db, sql: "SELECT * FROM channel WHERE id = ? AND bundleId = ?", arguments: [id, bundleId])
            .map(Self.channel(from:))
    }

    func channels(bundleId: BundleID) throws -> [BroadcastChannel] {
        try Row.fetchAll(db, sql: "SELECT * FROM channel WHERE bundleId = ? ORDER BY createdAt, id", arguments: [bundleId])
            .map(Self.channel(from:))
    }

    private static func channel(from row: Row) -> BroadcastChannel {
        BroadcastChannel(
            id: row["id"], bundleId: row["bundleId"], storagePolicy: row["storagePolicy"],
            createdAt: Date(timeIntervalSince1970: row["createdAt"]),
            environment: (row["environment"] as String?).flatMap(APNsEnvironment.init(rawValue:))
        )
    }

    func storedMessage(channelId: String) throws -> StoredMessage? {
        guard let row = try Row.fetchOne(db, sql: "SELECT message, messageExpiresAt FROM channel WHERE id = ?", arguments: [channelId]),
            let message: String = row["message"], let expires: Double = row["messageExpiresAt"]
        else { return nil }
        return StoredMessage(
            change: try WireFormat.decoder().decode(Activity.PushedChange.self, from: Data(message.utf8)),
            expires: Date(timeIntervalSince1970: expires)
        )
    }

    func token(_ token: String) throws -> TokenLookup {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM pushToken WHERE token = ?"), arguments: [token]) else {
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

    func pushToStartToken(deviceId: DeviceID, bundleId: BundleID) throws -> String? {
        try String.fetchOne(
            db.cachedStatement(sql: """
                SELECT token FROM pushToken
                WHERE kind = 'pushToStart' AND deviceId = ? AND bundleId = ? AND retiredAt IS NULL
                """),
            arguments: [deviceId, bundleId]
        )
    }

    func pushToStartHolders() throws -> [PushToStartHolder] {
        try Row.fetchAll(db, sql: "SELECT deviceId, bundleId FROM pushToken WHERE kind = 'pushToStart' AND retiredAt IS NULL")
            .map { PushToStartHolder(deviceId: $0["deviceId"], bundleId: $0["bundleId"]) }
    }

    // MARK: Events

    func events(after id: EventID, filter: EventFilter, limit: Int) throws -> [EncodedEvent] {
        var sql = "SELECT * FROM event WHERE id > ?"
        var arguments: [any DatabaseValueConvertible] = [id]
        if let bundleId = filter.bundleId {
            sql += " AND bundleId = ?"
            arguments.append(bundleId)
        }
        if let deviceId = filter.deviceId {
            sql += " AND deviceId = ?"
            arguments.append(deviceId)
        }
        if let activityId = filter.activityId {
            sql += " AND activityId = ?"
            arguments.append(activityId)
        }
        sql += " ORDER BY id LIMIT ?"
        arguments.append(limit)
        return try Row.fetchAll(db, sql: sql, arguments: StatementArguments(arguments)).compactMap(Self.event(from:))
    }

    func history(of id: ActivityID) throws -> [EncodedEvent] {
        // Back along the chain from the activity's last event (ChangeStatements.insertEvent);
        // it ends where retention deleted the rest.
        try Row.fetchAll(
            db,
            sql: """
                WITH RECURSIVE chain(id) AS (
                    SELECT lastEventId FROM activity WHERE id = ?
                    UNION ALL
                    SELECT event.previous FROM event JOIN chain ON event.id = chain.id WHERE event.previous IS NOT NULL
                )
                SELECT event.* FROM chain JOIN event ON event.id = chain.id ORDER BY event.id
                """,
            arguments: [id]
        ).compactMap(Self.event(from:))
    }

    func lastEventID() throws -> EventID {
        try EventID.fetchOne(db, sql: "SELECT MAX(id) FROM event") ?? 0
    }

    private static func event(from row: Row) -> EncodedEvent? {
        guard let type = EventType(rawValue: row["type"]) else { return nil }
        return EncodedEvent(
            id: row["id"], type: type, time: Date(timeIntervalSince1970: row["time"]), bundleId: row["bundleId"],
            deviceId: row["deviceId"], activityId: row["activityId"], dataJSON: row["data"]
        )
    }
}
