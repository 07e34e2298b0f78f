import Foundation
import IsletCore
import IsletEngine

/// Sends and their phones (docs/audiences.md, "How a send runs").
extension SQLReading {
    /// One send; in a write, locked until the transaction ends (two nodes resolving or
    /// finishing it take turns, the second reading what the first wrote).
    public func send(_ id: String) throws -> Send? {
        try session.row("SELECT json FROM send WHERE id = $1\(try session.rowsLock())", [id], SQLRows.send)
    }

    /// An app's sends in the order they were made, after `after`.
    public func sends(bundleId: BundleID, after: String?, limit: Int) throws -> [Send] {
        var conditions = SQLConditions()
        conditions.equal("bundleId", bundleId)
        if let after { conditions.append { value in "id > \(value(after))" } }
        let limit = conditions.value(limit)
        return try session.rows("SELECT json FROM send \(conditions.whereClause) ORDER BY id LIMIT \(limit)", conditions.values, SQLRows.send)
    }

    /// Sends that are due: scheduled for now or earlier, or running.
    public func dueSends(at now: Date, limit: Int) throws -> [Send] {
        try session.rows(
            "SELECT json FROM send WHERE status IN ('scheduled', 'running') AND (at IS NULL OR at <= $1) ORDER BY id LIMIT $2",
            [now.timeIntervalSince1970, limit], SQLRows.send
        )
    }

    /// When the next scheduled send is due.
    public func nextScheduledSend() throws -> Date? {
        try session.value("SELECT MIN(at) FROM send WHERE status = 'scheduled'", [], as: Double?.self).flatMap { $0 }.map { Date(timeIntervalSince1970: $0) }
    }

    /// A send's phones in order, after `seq`; only those with `outcome` when given.
    public func sendTargets(sendId: String, outcome: SendTargetOutcome?, after seq: Int64?, limit: Int) throws -> [SendTarget] {
        var conditions = SQLConditions()
        conditions.equal("sendId", sendId)
        conditions.equal("outcome", outcome?.rawValue)
        if let seq { conditions.append { value in "seq > \(value(seq))" } }
        let limit = conditions.value(limit)
        return try session.rows(
            "SELECT * FROM sendTarget \(conditions.whereClause) ORDER BY seq LIMIT \(limit)", conditions.values, SQLRows.sendTarget
        )
    }

    /// Up to `limit` of a send's phones still waiting, in order; in a write, claimed: those
    /// another transaction holds are left out, so nodes sharing a send take different phones.
    public func waitingSendTargets(sendId: String, limit: Int) throws -> [SendTarget] {
        try session.rows(
            "SELECT * FROM sendTarget WHERE sendId = $1 AND outcome IS NULL ORDER BY seq LIMIT $2\(session.skipLocked)", [sendId, limit],
            SQLRows.sendTarget
        )
    }

    public func sendOutcomeCounts(_ sendId: String) throws -> [SendTargetOutcome: Int] {
        var counts: [SendTargetOutcome: Int] = [:]
        for (outcome, count) in try session.rows(
            "SELECT outcome, COUNT(*) AS n FROM sendTarget WHERE sendId = $1 AND outcome IS NOT NULL GROUP BY outcome", [sendId],
            { row in (try row["outcome", as: String.self], try row["n", as: Int64.self]) }
        ) {
            if let outcome = SendTargetOutcome(rawValue: outcome) { counts[outcome] = Int(count) }
        }
        return counts
    }

    /// Whether any of a send's phones still waits (held by another transaction or not).
    public func sendHasWaitingTargets(_ sendId: String) throws -> Bool {
        try session.value("SELECT 1 FROM sendTarget WHERE sendId = $1 AND outcome IS NULL LIMIT 1", [sendId], as: Int64.self) != nil
    }

    /// The highest place among a send's phones (0 with none).
    public func lastSendTargetSeq(_ sendId: String) throws -> Int64 {
        try session.value("SELECT MAX(seq) FROM sendTarget WHERE sendId = $1", [sendId], as: Int64?.self).flatMap { $0 } ?? 0
    }

    /// The phones of the app's users named, each once.
    public func devicesOfUsers(bundleId: BundleID, externalIds: [String]) throws -> [DeviceID] {
        guard !externalIds.isEmpty else { return [] }
        var conditions = SQLConditions()
        conditions.equal("bundleId", bundleId)
        conditions.append { value in "externalId IN (\(externalIds.map { value($0) }.joined(separator: ", ")))" }
        return try session.values("SELECT DISTINCT deviceId FROM appUserDevice \(conditions.whereClause) ORDER BY deviceId", conditions.values)
    }

    /// Those of `ids` that are devices Islet knows.
    public func knownDevices(_ ids: [DeviceID]) throws -> [DeviceID] {
        guard !ids.isEmpty else { return [] }
        var conditions = SQLConditions()
        conditions.append { value in "id IN (\(ids.map { value($0) }.joined(separator: ", ")))" }
        return try session.values("SELECT id FROM device \(conditions.whereClause) ORDER BY id", conditions.values)
    }

    /// The live activity of the app with `key` on one phone, the newest if several; in a
    /// write, the key on that phone is locked first (a start under it makes the first).
    public func liveActivity(key: String, bundleId: BundleID, deviceId: DeviceID) throws -> Activity? {
        let newest = { (column: String) in
            "SELECT \(column) FROM activity WHERE bundleId = $1 AND key = $2 AND deviceId = $3 AND state IN \(liveStates) ORDER BY createdAt DESC LIMIT 1"
        }
        guard session.writing else { return try activities(newest("body"), [bundleId, key, deviceId]).first }
        try session.lock("key:\(bundleId):\(deviceId):\(key)")
        return try session.value(newest("id"), [bundleId, key, deviceId], as: String.self).flatMap { try activity($0) }
    }
}

extension SQLWriting {
    public func putSend(_ send: Send) throws {
        try session.execute(
            """
            INSERT INTO send (id, bundleId, status, at, json) VALUES ($1, $2, $3, $4, $5)
            ON CONFLICT (id) DO UPDATE SET status = excluded.status, at = excluded.at, json = excluded.json
            """,
            [send.id, send.bundleId, send.status.rawValue, send.body.at?.timeIntervalSince1970, try WireFormat.string(send)]
        )
    }

    /// Adds phones to a send after its last, each once (one already there is left as it is);
    /// returns how many were added.
    public func addSendTargets(sendId: String, devices: [DeviceID]) throws -> Int {
        var seq = try lastSendTargetSeq(sendId)
        var added = 0
        for device in devices {
            let inserted = try session.count(
                "INSERT INTO sendTarget (sendId, seq, deviceId) VALUES ($1, $2, $3) ON CONFLICT (sendId, deviceId) DO NOTHING", [sendId, seq + 1, device]
            )
            if inserted > 0 {
                seq += 1
                added += 1
            }
        }
        return added
    }

    /// Writes what a send did on one phone.
    public func finishSendTarget(_ target: SendTarget) throws {
        try session.execute(
            "UPDATE sendTarget SET outcome = $1, activityId = $2, reason = $3, doneAt = $4 WHERE sendId = $5 AND deviceId = $6",
            [target.outcome?.rawValue, target.activityId, target.reason, target.doneAt?.timeIntervalSince1970, target.sendId, target.deviceId]
        )
    }
}

extension SQLRows {
    public static func send(_ row: any SQLRow) throws -> Send {
        try WireFormat.decoder().decode(Send.self, from: Data(try row["json", as: String.self].utf8))
    }

    public static func sendTarget(_ row: any SQLRow) throws -> SendTarget {
        SendTarget(
            sendId: try row["sendId"], seq: try row["seq"], deviceId: try row["deviceId"],
            outcome: try row["outcome", as: String?.self].flatMap(SendTargetOutcome.init(rawValue:)), activityId: try row["activityId"],
            reason: try row["reason"], doneAt: try row.optionalDate("doneAt")
        )
    }
}
