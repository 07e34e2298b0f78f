import Foundation
import IsletCore
import IsletEngine

/// The delivery tables as the engine reads them: credentials, phones' tokens, phones'
/// activities, the outbox.
extension SQLReading {
    public func deliveryCredentials(bundleId: BundleID) throws -> [StoredCredential] {
        try session.rows("SELECT * FROM deliveryCredential WHERE bundleId = $1 ORDER BY environment, createdAt, keyId", [bundleId], SQLRows.credential)
    }

    public func refusedCredentials() throws -> [DeliveryCredential] {
        try session.rows("SELECT * FROM deliveryCredential WHERE failure IS NOT NULL ORDER BY bundleId, environment", [], SQLRows.credential)
            .map(\.credential)
    }

    public func pushToStartToken(deviceId: DeviceID, bundleId: BundleID, attributesType: String) throws -> PhoneToken? {
        try session.row(
            """
            SELECT * FROM phoneToken WHERE kind = 'pushToStart' AND deviceId = $1 AND bundleId = $2 AND attributesType = $3
            AND retiredAt IS NULL ORDER BY createdAt DESC LIMIT 1
            """,
            [deviceId, bundleId, attributesType], SQLRows.phoneToken
        )
    }

    public func updateToken(activityId: ActivityID) throws -> PhoneToken? {
        try session.row(
            "SELECT * FROM phoneToken WHERE kind = 'update' AND activityId = $1 AND retiredAt IS NULL ORDER BY createdAt DESC LIMIT 1",
            [activityId], SQLRows.phoneToken
        )
    }

    public func phoneToken(_ token: String) throws -> PhoneToken? {
        try session.row("SELECT * FROM phoneToken WHERE token = $1", [token], SQLRows.phoneToken)
    }

    public func phoneTokens(deviceId: DeviceID) throws -> [PhoneToken] {
        try session.rows("SELECT * FROM phoneToken WHERE deviceId = $1 ORDER BY createdAt DESC, token", [deviceId], SQLRows.phoneToken)
    }

    public func phoneBudget(deviceId: DeviceID, bundleId: BundleID) throws -> [Date] {
        let text = try session.value("SELECT budgeted FROM phoneBudget WHERE deviceId = $1 AND bundleId = $2", [deviceId, bundleId], as: String.self)
        return SQLRows.dates(text)
    }

    public func phoneActivity(_ id: ActivityID) throws -> PhoneActivity? {
        // In a change of several writers, read under its activity's lock (which reads it too).
        if session.writing {
            if let cached = session.cache.phoneActivities[id] { return cached }
            if try activity(id) != nil, let cached = session.cache.phoneActivities[id] { return cached }
        }
        return try session.row("SELECT * FROM phoneActivity WHERE activityId = $1", [id], SQLRows.phoneActivity)
    }

    public func phoneActivityForSending(_ id: ActivityID) throws -> PhoneActivity? {
        try session.row("SELECT * FROM phoneActivity WHERE activityId = $1", [id], SQLRows.phoneActivity)
    }

    public func attributesType(ofActivity id: ActivityID) throws -> String? {
        try session.values("SELECT attributesType FROM activity WHERE id = $1", [id], as: String.self).first
    }

    public func delivery(_ id: Int64) throws -> Delivery? {
        guard session.writing else { return try session.row("SELECT * FROM delivery WHERE id = $1", [id], SQLRows.delivery) }
        return try locked(
            "SELECT * FROM delivery WHERE id = $1", [id], exists: "SELECT 1 FROM delivery WHERE id = $1", what: "delivery \(id)", SQLRows.delivery
        )
    }

    public func unfinishedDeliveries(in order: Delivery.Order) throws -> [Delivery] {
        try session.rows(
            "SELECT * FROM delivery WHERE orderKey = $1 AND state IN \(unfinished) ORDER BY id\(try session.rowsLock())", [order.key],
            SQLRows.delivery
        )
    }

    public func dueDeliveries(at date: Date, limit: Int) throws -> [Delivery] {
        try session.rows(SQLQueries.dueDeliveries(session.dialect, lock: session.skipLocked), [date.timeIntervalSince1970, limit], SQLRows.delivery)
    }

    public func heldDeliveries(bundleId: BundleID) throws -> [Delivery] {
        try session.rows(
            "SELECT * FROM delivery WHERE state IN \(unfinished) AND state = 'held' AND bundleId = $1 ORDER BY id\(try session.rowsLock())",
            [bundleId], SQLRows.delivery
        )
    }

    public func claimedDeliveries() throws -> [Delivery] {
        try session.rows(
            "SELECT * FROM delivery WHERE state IN \(sendable) AND state = 'sending' ORDER BY id\(try session.rowsLock())", [], SQLRows.delivery
        )
    }

    public func nextDeliveryAttempt() throws -> Date? {
        try session.value(
            "SELECT MIN(CASE state WHEN 'sending' THEN leaseUntil ELSE nextAttemptAt END) FROM delivery WHERE state IN \(sendable)",
            as: Double?.self
        )?.map(Date.init(timeIntervalSince1970:))
    }

    public func deliveryBacklog(bundleId: BundleID?) throws -> DeliveryBacklog {
        var conditions = SQLConditions()
        conditions.append { _ in "state IN \(unfinished)" }
        conditions.equal("bundleId", bundleId)
        return try session.row(
            """
            SELECT COUNT(*) AS depth, MIN(createdAt) AS oldest, COUNT(CASE WHEN state = 'pending' AND attempts > 0 THEN 1 END) AS retrying,
                COUNT(CASE WHEN state = 'held' THEN 1 END) AS held
            FROM delivery \(conditions.whereClause)
            """,
            conditions.values
        ) { row in
            DeliveryBacklog(depth: try row["depth"], oldest: try row.optionalDate("oldest"), retrying: try row["retrying"], held: try row["held"])
        } ?? DeliveryBacklog(depth: 0, oldest: nil)
    }
}

extension SQLQueries {
    /// The oldest finished deliveries, finished before `$1`, at most `$2`: what retention deletes
    /// (through `delivery_finished`, never the unfinished rows).
    static let finishedDeliveries = "SELECT id FROM delivery WHERE finishedAt < $1 ORDER BY finishedAt LIMIT $2"

    /// The deliveries to send now (`$1`: the time, `$2`: how many at most): the oldest
    /// unfinished delivery of each order key, when it is pending and due, or its lease has run
    /// out — one at a time per activity keeps its order. `lock` claims them (`SKIP LOCKED`).
    static func dueDeliveries(_ dialect: SQLDialect, lock: String) -> String {
        let oldestOfItsKey = "d.id = (SELECT MIN(e.id) FROM delivery e WHERE e.orderKey = d.orderKey AND e.state IN \(unfinished))"
        switch dialect {
        case .sqlite:
            // Each state is read from the `delivery_due` index in order, stopping at the limit.
            // SQLite uses a partial index only when the query repeats its condition word for
            // word; with an `OR` of the two states it scanned every delivery ever made, finished
            // ones included, on every claim (10 ms with 60,000 of them; 0.05 ms this way).
            return """
                SELECT * FROM (
                    SELECT d.* FROM delivery d
                    WHERE d.state IN \(sendable) AND d.state = 'pending' AND d.nextAttemptAt <= $1 AND \(oldestOfItsKey)
                    ORDER BY d.nextAttemptAt, d.id LIMIT $2
                )
                UNION ALL
                SELECT * FROM (
                    SELECT d.* FROM delivery d
                    WHERE d.state IN \(sendable) AND d.state = 'sending' AND d.leaseUntil <= $1 AND \(oldestOfItsKey)
                    ORDER BY d.nextAttemptAt, d.id LIMIT $2
                )
                ORDER BY nextAttemptAt, id LIMIT $2
                """
        case .postgresql:
            // One statement, so that its rows can be claimed `SKIP LOCKED` (a union cannot lock).
            return """
                SELECT * FROM delivery d
                WHERE d.state IN \(sendable)
                  AND ((d.state = 'pending' AND d.nextAttemptAt <= $1) OR (d.state = 'sending' AND d.leaseUntil <= $1))
                  AND \(oldestOfItsKey)
                ORDER BY d.nextAttemptAt, d.id LIMIT $2\(lock)
                """
        }
    }
}

/// The states of the `delivery_unfinished` index's condition, as it is written there: a query
/// repeats it for SQLite to use the index.
let unfinished = "('pending', 'sending', 'held')"
/// The states of the `delivery_due` index's condition, likewise.
let sendable = "('pending', 'sending')"
