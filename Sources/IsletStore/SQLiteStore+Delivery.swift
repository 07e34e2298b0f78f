import Foundation
import GRDB
import IsletCore
import IsletEngine

/// The delivery tables as the engine reads them: credentials, phones' tokens, phones'
/// activities, the outbox.
extension SQLiteReading {
    func deliveryCredentials(bundleId: BundleID) throws -> [StoredCredential] {
        try Row.fetchAll(
            db.cachedStatement(sql: "SELECT * FROM deliveryCredential WHERE bundleId = ? ORDER BY environment"), arguments: [bundleId]
        ).map(DeliveryRows.credential(from:))
    }

    func refusedCredentials() throws -> [DeliveryCredential] {
        try Row.fetchAll(db, sql: "SELECT * FROM deliveryCredential WHERE failure IS NOT NULL ORDER BY bundleId, environment")
            .map { DeliveryRows.credential(from: $0).credential }
    }

    func pushToStartToken(deviceId: DeviceID, bundleId: BundleID, attributesType: String) throws -> PhoneToken? {
        try Row.fetchOne(
            db.cachedStatement(sql: """
                SELECT * FROM phoneToken WHERE kind = 'pushToStart' AND deviceId = ? AND bundleId = ? AND attributesType = ?
                AND retiredAt IS NULL ORDER BY createdAt DESC LIMIT 1
                """),
            arguments: [deviceId, bundleId, attributesType]
        ).map(DeliveryRows.token(from:))
    }

    func updateToken(activityId: ActivityID) throws -> PhoneToken? {
        try Row.fetchOne(
            db.cachedStatement(sql: """
                SELECT * FROM phoneToken WHERE kind = 'update' AND activityId = ? AND retiredAt IS NULL
                ORDER BY createdAt DESC LIMIT 1
                """),
            arguments: [activityId]
        ).map(DeliveryRows.token(from:))
    }

    func phoneToken(_ token: String) throws -> PhoneToken? {
        try Row.fetchOne(db, sql: "SELECT * FROM phoneToken WHERE token = ?", arguments: [token]).map(DeliveryRows.token(from:))
    }

    func phoneTokens(deviceId: DeviceID) throws -> [PhoneToken] {
        try Row.fetchAll(db, sql: "SELECT * FROM phoneToken WHERE deviceId = ? ORDER BY createdAt DESC, token", arguments: [deviceId])
            .map(DeliveryRows.token(from:))
    }

    func phoneActivity(_ id: ActivityID) throws -> PhoneActivity? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM phoneActivity WHERE activityId = ?"), arguments: [id])
            .map(DeliveryRows.phoneActivity(from:))
    }

    func delivery(_ id: Int64) throws -> Delivery? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM delivery WHERE id = ?"), arguments: [id]).map(DeliveryRows.delivery(from:))
    }

    func unfinishedDeliveries(orderKey: String) throws -> [Delivery] {
        try Row.fetchAll(
            db.cachedStatement(sql: "SELECT * FROM delivery WHERE orderKey = ? AND state IN \(DeliveryRows.unfinished) ORDER BY id"),
            arguments: [orderKey]
        ).map(DeliveryRows.delivery(from:))
    }

    func dueDeliveries(at date: Date, limit: Int) throws -> [Delivery] {
        try Row.fetchAll(
            db.cachedStatement(sql: DeliveryRows.dueQuery), arguments: [date.timeIntervalSince1970, limit]
        ).map(DeliveryRows.delivery(from:))
    }

    func heldDeliveries(bundleId: BundleID) throws -> [Delivery] {
        try Row.fetchAll(
            db, sql: "SELECT * FROM delivery WHERE state IN \(DeliveryRows.unfinished) AND state = 'held' AND bundleId = ? ORDER BY id",
            arguments: [bundleId]
        )
            .map(DeliveryRows.delivery(from:))
    }

    func claimedDeliveries() throws -> [Delivery] {
        try Row.fetchAll(db, sql: "SELECT * FROM delivery WHERE state IN \(DeliveryRows.sendable) AND state = 'sending' ORDER BY id")
            .map(DeliveryRows.delivery(from:))
    }

    func nextDeliveryAttempt() throws -> Date? {
        try Double.fetchOne(
            db, sql: "SELECT MIN(CASE state WHEN 'sending' THEN leaseUntil ELSE nextAttemptAt END) FROM delivery WHERE state IN ('pending', 'sending')"
        ).map(Date.init(timeIntervalSince1970:))
    }

    func deliveryBacklog(bundleId: BundleID?) throws -> DeliveryBacklog {
        let row = try Row.fetchOne(
            db,
            sql: """
                SELECT COUNT(*) AS depth, MIN(createdAt) AS oldest, SUM(state = 'pending' AND attempts > 0) AS retrying,
                    SUM(state = 'held') AS held
                FROM delivery WHERE state IN \(DeliveryRows.unfinished) \(bundleId == nil ? "" : "AND bundleId = ?")
                """,
            arguments: StatementArguments(bundleId.map { [$0] } ?? [])
        )
        return DeliveryBacklog(
            depth: row?["depth"] ?? 0, oldest: (row?["oldest"] as Double?).map(Date.init(timeIntervalSince1970:)),
            retrying: row?["retrying"] ?? 0, held: row?["held"] ?? 0
        )
    }
}

extension SQLiteTransaction {
    func putCredential(_ stored: StoredCredential) throws {
        let credential = stored.credential
        try db.execute(
            sql: """
                INSERT INTO deliveryCredential (bundleId, environment, teamId, keyId, privateKey, url, caCertificate, createdAt, failure)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(bundleId, environment) DO UPDATE SET teamId = excluded.teamId, keyId = excluded.keyId,
                    privateKey = excluded.privateKey, url = excluded.url, caCertificate = excluded.caCertificate,
                    createdAt = excluded.createdAt, failure = excluded.failure
                """,
            arguments: [
                credential.bundleId, credential.environment.rawValue, credential.teamId, credential.keyId, stored.privateKey,
                credential.url, credential.caCertificate, credential.createdAt.timeIntervalSince1970, credential.failure,
            ]
        )
    }

    func deleteCredentials(bundleId: BundleID, environment: APNsEnvironment?) throws -> Int {
        if let environment {
            try db.execute(sql: "DELETE FROM deliveryCredential WHERE bundleId = ? AND environment = ?", arguments: [bundleId, environment.rawValue])
        } else {
            try db.execute(sql: "DELETE FROM deliveryCredential WHERE bundleId = ?", arguments: [bundleId])
        }
        return db.changesCount
    }

    func setCredentialFailure(bundleId: BundleID, environment: APNsEnvironment, failure: String?) throws {
        try db.execute(
            sql: "UPDATE deliveryCredential SET failure = ? WHERE bundleId = ? AND environment = ?",
            arguments: [failure, bundleId, environment.rawValue]
        )
    }

    func putPhoneToken(_ token: PhoneToken) throws {
        try db.execute(
            sql: """
                INSERT INTO phoneToken (token, kind, bundleId, deviceId, attributesType, activityId, environment, createdAt,
                    retiredAt, retiredReason, appleTimestamp, lastAt, lastStatus, lastReason)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, NULL, NULL, NULL, NULL)
                ON CONFLICT(token) DO UPDATE SET kind = excluded.kind, bundleId = excluded.bundleId, deviceId = excluded.deviceId,
                    attributesType = excluded.attributesType, activityId = excluded.activityId, environment = excluded.environment,
                    createdAt = excluded.createdAt, retiredAt = NULL, retiredReason = NULL, appleTimestamp = NULL,
                    lastAt = NULL, lastStatus = NULL, lastReason = NULL
                """,
            arguments: [
                token.token, token.kind.rawValue, token.bundleId, token.deviceId, token.attributesType, token.activityId,
                token.environment.rawValue, token.createdAt.timeIntervalSince1970,
            ]
        )
    }

    func retirePhoneTokens(_ holder: PhoneTokenHolder, reason: String) throws {
        switch holder {
        case .pushToStart(let deviceId, let bundleId, let attributesType):
            try db.execute(
                sql: """
                    UPDATE phoneToken SET retiredAt = ?, retiredReason = ?
                    WHERE kind = 'pushToStart' AND deviceId = ? AND bundleId = ? AND attributesType = ? AND retiredAt IS NULL
                    """,
                arguments: [now.timeIntervalSince1970, reason, deviceId, bundleId, attributesType]
            )
        case .update(let activityId):
            try db.execute(
                sql: "UPDATE phoneToken SET retiredAt = ?, retiredReason = ? WHERE kind = 'update' AND activityId = ? AND retiredAt IS NULL",
                arguments: [now.timeIntervalSince1970, reason, activityId]
            )
        }
    }

    func retirePhoneToken(_ token: String, reason: String, appleTimestamp: Date?) throws {
        try db.execute(
            sql: "UPDATE phoneToken SET retiredAt = ?, retiredReason = ?, appleTimestamp = ? WHERE token = ? AND retiredAt IS NULL",
            arguments: [now.timeIntervalSince1970, reason, appleTimestamp?.timeIntervalSince1970, token]
        )
    }

    func recordTokenResult(_ token: String, at date: Date, status: Int, reason: String?) throws {
        try db.execute(
            sql: "UPDATE phoneToken SET lastAt = ?, lastStatus = ?, lastReason = ? WHERE token = ?",
            arguments: [date.timeIntervalSince1970, status, reason, token]
        )
    }

    func putPhoneActivity(_ phone: PhoneActivity) throws {
        try db.execute(
            sql: """
                INSERT INTO phoneActivity (activityId, bundleId, deviceId, environment, channelId, state, budgeted)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(activityId) DO UPDATE SET environment = excluded.environment, channelId = excluded.channelId,
                    state = excluded.state, budgeted = excluded.budgeted
                """,
            arguments: [
                phone.activityId, phone.bundleId, phone.deviceId, phone.environment.rawValue, phone.channelId, phone.state.rawValue,
                phone.budgeted.map { String($0.timeIntervalSince1970) }.joined(separator: ","),
            ]
        )
    }

    func insertDelivery(_ delivery: Delivery) throws -> Int64 {
        try db.cachedStatement(sql: """
            INSERT INTO delivery (orderKey, activityId, bundleId, deviceId, channelId, event, payload, alert, expiration, state,
                attempts, nextAttemptAt, leaseUntil, createdAt, finishedAt, apnsId)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """).execute(arguments: DeliveryRows.arguments(delivery))
        return db.lastInsertedRowID
    }

    func updateDelivery(_ delivery: Delivery) throws {
        try db.cachedStatement(sql: """
            UPDATE delivery SET state = ?, attempts = ?, nextAttemptAt = ?, leaseUntil = ?, finishedAt = ? WHERE id = ?
            """).execute(arguments: [
                delivery.state.rawValue, delivery.attempts, delivery.nextAttemptAt.timeIntervalSince1970,
                delivery.leaseUntil?.timeIntervalSince1970, delivery.finishedAt?.timeIntervalSince1970, delivery.id,
            ])
    }
}

/// Delivery rows to values and back.
enum DeliveryRows {
    /// The states of the `delivery_unfinished` index's condition, as it is written there: a query
    /// repeats it for SQLite to use the index.
    static let unfinished = "('pending', 'sending', 'held')"
    /// The states of the `delivery_due` index's condition, likewise.
    static let sendable = "('pending', 'sending')"

    /// The deliveries to send now (`?1`: the time, `?2`: how many at most): the oldest unfinished
    /// delivery of each order key, when it is pending and due, or its lease has run out — one at
    /// a time per activity keeps its order.
    ///
    /// Each state is read from the `delivery_due` index in order, stopping at the limit. SQLite
    /// uses a partial index only when the query repeats its condition word for word; with an
    /// `OR` of the two states it scanned every delivery ever made, finished ones included, on
    /// every claim (10 ms with 60,000 of them; 0.05 ms this way).
    static let dueQuery: String = {
        let oldestOfItsKey = "d.id = (SELECT MIN(e.id) FROM delivery e WHERE e.orderKey = d.orderKey AND e.state IN \(unfinished))"
        return """
            SELECT * FROM (
                SELECT d.* FROM delivery d
                WHERE d.state IN \(sendable) AND d.state = 'pending' AND d.nextAttemptAt <= ?1 AND \(oldestOfItsKey)
                ORDER BY d.nextAttemptAt, d.id LIMIT ?2
            )
            UNION ALL
            SELECT * FROM (
                SELECT d.* FROM delivery d
                WHERE d.state IN \(sendable) AND d.state = 'sending' AND d.leaseUntil <= ?1 AND \(oldestOfItsKey)
                ORDER BY d.nextAttemptAt, d.id LIMIT ?2
            )
            ORDER BY nextAttemptAt, id LIMIT ?2
            """
    }()

    static func credential(from row: Row) -> StoredCredential {
        StoredCredential(
            credential: DeliveryCredential(
                bundleId: row["bundleId"], environment: APNsEnvironment(rawValue: row["environment"]) ?? .development,
                teamId: row["teamId"], keyId: row["keyId"], url: row["url"], caCertificate: row["caCertificate"],
                createdAt: Date(timeIntervalSince1970: row["createdAt"]), failure: row["failure"]
            ),
            privateKey: row["privateKey"]
        )
    }

    static func token(from row: Row) -> PhoneToken {
        var token = PhoneToken(
            token: row["token"], kind: PhoneToken.Kind(rawValue: row["kind"]) ?? .update, bundleId: row["bundleId"],
            deviceId: row["deviceId"], attributesType: row["attributesType"], activityId: row["activityId"],
            environment: APNsEnvironment(rawValue: row["environment"]) ?? .development,
            createdAt: Date(timeIntervalSince1970: row["createdAt"])
        )
        token.retiredAt = (row["retiredAt"] as Double?).map(Date.init(timeIntervalSince1970:))
        token.retiredReason = row["retiredReason"]
        token.lastAt = (row["lastAt"] as Double?).map(Date.init(timeIntervalSince1970:))
        token.lastStatus = row["lastStatus"]
        token.lastReason = row["lastReason"]
        return token
    }

    static func phoneActivity(from row: Row) -> PhoneActivity {
        let budgeted = (row["budgeted"] as String? ?? "").split(separator: ",").compactMap { Double($0) }
        return PhoneActivity(
            activityId: row["activityId"], bundleId: row["bundleId"], deviceId: row["deviceId"],
            environment: APNsEnvironment(rawValue: row["environment"]) ?? .development, channelId: row["channelId"],
            state: PhoneActivity.State(rawValue: row["state"]) ?? .active, budgeted: budgeted.map(Date.init(timeIntervalSince1970:))
        )
    }

    static func delivery(from row: Row) -> Delivery {
        Delivery(
            id: row["id"], orderKey: row["orderKey"], activityId: row["activityId"], bundleId: row["bundleId"],
            deviceId: row["deviceId"], channelId: row["channelId"], event: row["event"], payload: row["payload"], alert: row["alert"],
            expiration: (row["expiration"] as Double?).map(Date.init(timeIntervalSince1970:)),
            state: Delivery.State(rawValue: row["state"]) ?? .failed, attempts: row["attempts"],
            nextAttemptAt: Date(timeIntervalSince1970: row["nextAttemptAt"]),
            leaseUntil: (row["leaseUntil"] as Double?).map(Date.init(timeIntervalSince1970:)),
            createdAt: Date(timeIntervalSince1970: row["createdAt"]),
            finishedAt: (row["finishedAt"] as Double?).map(Date.init(timeIntervalSince1970:)), apnsId: row["apnsId"]
        )
    }

    static func arguments(_ delivery: Delivery) -> StatementArguments {
        [
            delivery.orderKey, delivery.activityId, delivery.bundleId, delivery.deviceId, delivery.channelId, delivery.event,
            delivery.payload, delivery.alert, delivery.expiration?.timeIntervalSince1970, delivery.state.rawValue,
            delivery.attempts, delivery.nextAttemptAt.timeIntervalSince1970, delivery.leaseUntil?.timeIntervalSince1970,
            delivery.createdAt.timeIntervalSince1970, delivery.finishedAt?.timeIntervalSince1970, delivery.apnsId,
        ]
    }
}
