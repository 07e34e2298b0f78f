import Foundation
import IsletCore
import IsletEngine
import PostgresNIO

/// The engine's reads as PostgreSQL over one session: a pooled connection outside any
/// transaction, or a write transaction (which sees its own writes).
///
/// In a write transaction (`READ COMMITTED`) a read locks what the change will decide on, as
/// `session.locking` says (docs/cluster.md, "Isolation"): an activity's row — which also
/// guards its phone state and its deliveries —, a device's count, an app's key, a token's
/// holder, a layout's revision. Due work is read `FOR UPDATE SKIP LOCKED`: two nodes claiming
/// deadlines or deliveries at once take different ones.
protocol PostgresReading: StoreReading {
    var session: PostgresSession { get }
}

/// Reads on a pooled connection, each statement seeing what was committed when it began.
struct PostgresSnapshot: PostgresReading {
    let session: PostgresSession
}

private let liveStates = "('pending', 'active', 'stale')"

extension PostgresReading {
    private var skipLocked: String { session.locking == .none ? "" : " FOR UPDATE SKIP LOCKED" }
    private var writing: Bool { session.locking != .none }

    /// The rows of `sql`, locked as `session.rowLock` says. A row another transaction holds is
    /// left out at first (`SKIP LOCKED`): when nothing was found, `exists` (the same values)
    /// tells a held row from none, and a held one is `PostgresBusy`.
    private func locked<T>(
        _ sql: String, _ values: [(any PostgresDynamicTypeEncodable)?], of alias: String? = nil, exists: String, what: String,
        activity: ActivityID? = nil, _ read: (Columns) throws -> T
    ) throws -> T? {
        if let found = try session.query(sql + session.rowLock(of: alias), values, reading: activity).first.map({ try read(Columns($0)) }) {
            return found
        }
        if session.locking == .nowait, !(try session.query(exists, values, reading: activity).isEmpty) {
            throw PostgresBusy(what: what)
        }
        return nil
    }

    // MARK: Apps and devices

    func app(_ bundleId: BundleID) throws -> App? {
        try session.row("SELECT * FROM app WHERE bundleId = $1", [bundleId], Rows.app)
    }

    func apps() throws -> [App] {
        try session.rows("SELECT * FROM app ORDER BY bundleId", [], Rows.app)
    }

    func device(_ id: DeviceID) throws -> Device? {
        try session.row("SELECT * FROM device WHERE id = $1", [id], Rows.device)
    }

    func devices() throws -> [Device] {
        try session.rows("SELECT * FROM device ORDER BY id", [], Rows.device)
    }

    func devices(after id: DeviceID?, limit: Int) throws -> [Device] {
        try session.rows("SELECT * FROM device WHERE id > $1 ORDER BY id LIMIT $2", [id ?? "", limit], Rows.device)
    }

    func settings(deviceId: DeviceID, bundleId: BundleID) throws -> AppSettings {
        var settings = AppSettings(bundleId: bundleId, deviceId: deviceId)
        _ = try session.row("SELECT * FROM appSettings WHERE deviceId = $1 AND bundleId = $2", [deviceId, bundleId]) { row in
            settings.activitiesEnabled = try row["activitiesEnabled"]
            settings.frequentUpdates = try row["frequentUpdates"]
        }
        settings.pushToStartToken = try pushToStartToken(deviceId: deviceId, bundleId: bundleId)
        return settings
    }

    func keyOwner(hash: String) throws -> KeyOwner? {
        try session.row("SELECT bundleId, deviceId FROM apiKey WHERE hash = $1", [hash]) { row -> KeyOwner in
            if let bundleId = try row["bundleId", as: String?.self] { return .app(bundleId) }
            if let deviceId = try row["deviceId", as: String?.self] { return .device(deviceId) }
            return .admin
        }
    }

    // MARK: Activities

    func activity(_ id: ActivityID) throws -> Activity? {
        guard writing else { return try activities("SELECT body FROM activity WHERE id = $1", [id]).first }
        // Under the activity's lock, its phone state too: a change reads both, in one trip.
        let found = try locked(
            "SELECT a.body, p.* FROM activity a LEFT JOIN phoneActivity p ON p.activityId = a.id WHERE a.id = $1",
            [id], of: "a", exists: "SELECT 1 FROM activity WHERE id = $1", what: "activity \(id)", activity: id
        ) { row -> (Activity, PhoneActivity?) in
            let body = try row["body", as: String.self]
            // The body the last change here wrote is not decoded again (`DecodedActivities`).
            let activity = try PostgresTransaction.decoded.activity(id, body: body)
                ?? WireFormat.decoder().decode(Activity.self, from: Data(body.utf8))
            let phone = try row["activityId", as: String?.self] == nil ? nil : try Rows.phoneActivity(row)
            return (activity, phone)
        }
        guard let (activity, phone) = found else { return nil }
        session.cache.phoneActivities[id] = .some(phone)
        return activity
    }

    /// The activities a query selects; it must select `body` first.
    private func activities(_ sql: String, _ values: [(any PostgresDynamicTypeEncodable)?]) throws -> [Activity] {
        let decoder = WireFormat.decoder()
        return try session.values(sql, values, as: String.self).map { body in try decoder.decode(Activity.self, from: Data(body.utf8)) }
    }

    func activities(_ filter: ActivityFilter) throws -> [(activity: Activity, place: ActivityPlace)] {
        var conditions: [String] = []
        var values: [(any PostgresDynamicTypeEncodable)?] = []
        func value(_ value: any PostgresDynamicTypeEncodable) -> String {
            values.append(value)
            return "$\(values.count)"
        }
        func condition(_ column: String, _ given: String?) {
            guard let given else { return }
            conditions.append("\(column) = \(value(given))")
        }
        condition("bundleId", filter.bundleId)
        condition("deviceId", filter.deviceId)
        condition("attributesType", filter.attributesType)
        if let states = filter.states {
            conditions.append("state = ANY(\(value(states.sorted().map(\.rawValue))))")
        }
        if let query = filter.query {
            // "~" sorts after every character of an id (byte order, as COLLATE "C" compares).
            let low = value(query.uppercased()), high = value(query.uppercased() + "~")
            conditions.append(
                "((id COLLATE \"C\" >= \(low) AND id COLLATE \"C\" < \(high)) OR left(key, \(value(Int32(query.count)))) = \(value(query)))"
            )
        }
        if let updatedSince = filter.updatedSince {
            conditions.append("updatedAt >= \(value(updatedSince.timeIntervalSince1970))")
        }
        if let after = filter.after {
            // The listing's order as one row value, which the activity_listing indexes seek to.
            let place = [value(-after.score), value(after.start), value(after.id)].joined(separator: ", ")
            conditions.append("(listingScore, startTime, id COLLATE \"C\") > (\(place))")
        }
        let whereClause = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        let limit = value(filter.limit + 1)
        let decoder = WireFormat.decoder()
        return try session.rows(
            """
            SELECT body, relevanceScore, startTime, id FROM activity \(whereClause)
            ORDER BY listingScore, startTime, id COLLATE "C" LIMIT \(limit)
            """,
            values
        ) { row in
            let place = ActivityPlace(score: try row["relevancescore"], start: try row["starttime"], id: try row["id"])
            return (try decoder.decode(Activity.self, from: Data(try row["body", as: String.self].utf8)), place)
        }
    }

    func activityIDs(prefix: String, bundleId: BundleID?, limit: Int) throws -> [ActivityID] {
        // "~" sorts after every character of an id (byte order, as COLLATE "C" compares).
        var sql = "SELECT id FROM activity WHERE id COLLATE \"C\" >= $1 AND id COLLATE \"C\" < $2"
        var values: [(any PostgresDynamicTypeEncodable)?] = [prefix, prefix + "~"]
        if let bundleId {
            values.append(bundleId)
            sql += " AND bundleId = $\(values.count)"
        }
        values.append(limit)
        return try session.values(sql + " ORDER BY id COLLATE \"C\" LIMIT $\(values.count)", values)
    }

    func liveActivity(key: String, bundleId: BundleID) throws -> Activity? {
        let sql = "SELECT id FROM activity WHERE bundleId = $1 AND key = $2 AND state IN \(liveStates) ORDER BY createdAt DESC LIMIT 1"
        guard writing else {
            return try activities(sql.replacingOccurrences(of: "SELECT id", with: "SELECT body"), [bundleId, key]).first
        }
        // The key is locked before it is looked for (a start under it makes the first), and the
        // activity found is read under its own lock.
        try session.lock("key:\(bundleId):\(key)")
        return try session.value(sql, [bundleId, key], as: String.self).flatMap { try activity($0) }
    }

    func liveActivityCount(deviceId: DeviceID, bundleId: BundleID?) throws -> Int {
        // Counted under the device's lock: starts on one device take turns with the count.
        try session.lock("device:\(deviceId)")
        if let bundleId {
            return try session.value(
                "SELECT COUNT(*) FROM activity WHERE deviceId = $1 AND bundleId = $2 AND state IN \(liveStates)", [deviceId, bundleId], as: Int.self
            ) ?? 0
        }
        return try session.value("SELECT COUNT(*) FROM activity WHERE deviceId = $1 AND state IN \(liveStates)", [deviceId], as: Int.self) ?? 0
    }

    func liveActivities(channelId: String, bundleId: BundleID) throws -> [Activity] {
        try activities(
            "SELECT body FROM activity WHERE channelId = $1 AND bundleId = $2 AND state IN \(liveStates) ORDER BY id\(try session.rowsLock())",
            [channelId, bundleId]
        )
    }

    func shownActivities(bundleId: BundleID, deviceId: DeviceID?, attributesType: String?) throws -> [Activity] {
        var sql = "SELECT body FROM activity WHERE bundleId = $1 AND state != 'dismissed'"
        var values: [(any PostgresDynamicTypeEncodable)?] = [bundleId]
        if let deviceId {
            values.append(deviceId)
            sql += " AND deviceId = $\(values.count)"
        }
        if let attributesType {
            values.append(attributesType)
            sql += " AND attributesType = $\(values.count)"
        }
        return try activities(sql + " ORDER BY id" + (try session.rowsLock()), values)
    }

    func liveActivitiesWithPushTokens() throws -> [Activity] {
        try activities(
            "SELECT body FROM activity WHERE state IN \(liveStates) AND (body::jsonb ->> 'pushToken') IS NOT NULL ORDER BY id\(try session.rowsLock())", []
        )
    }

    func dueActivities(at date: Date, limit: Int) throws -> [Activity] {
        try activities(
            "SELECT body FROM activity WHERE deadline <= $1 ORDER BY deadline LIMIT $2\(skipLocked)", [date.timeIntervalSince1970, limit]
        )
    }

    func nextDeadline() throws -> Date? {
        try session.value("SELECT MIN(deadline) FROM activity", as: Double?.self)?.map(Date.init(timeIntervalSince1970:))
    }

    func activityCounts(bundleId: BundleID?) throws -> [ActivityState: Int] {
        var counts = Dictionary(uniqueKeysWithValues: ActivityState.allCases.map { ($0, 0) })
        _ = try session.rows("SELECT state, COUNT(*) AS count FROM activity WHERE $1::text IS NULL OR bundleId = $1 GROUP BY state", [bundleId]) { row in
            if let state = ActivityState(rawValue: try row["state"]) {
                counts[state] = try row["count", as: Int.self]
            }
        }
        return counts
    }

    func population(bundleId: BundleID?) throws -> Population {
        let sql =
            bundleId == nil
            ? """
            SELECT (SELECT COUNT(*) FROM app) AS apps, (SELECT COUNT(*) FROM device) AS devices,
                (SELECT COUNT(DISTINCT deviceId) FROM phoneToken WHERE retiredAt IS NULL) AS phones
            WHERE $1::text IS NULL
            """
            : """
            SELECT (SELECT COUNT(*) FROM app WHERE bundleId = $1) AS apps,
                (SELECT COUNT(DISTINCT deviceId) FROM activity WHERE bundleId = $1) AS devices,
                (SELECT COUNT(DISTINCT deviceId) FROM phoneToken WHERE retiredAt IS NULL AND bundleId = $1) AS phones
            """
        return try session.row(sql, [bundleId]) { row in
            Population(apps: try row["apps"], devices: try row["devices"], phones: try row["phones"])
        } ?? Population(apps: 0, devices: 0, phones: 0)
    }

    // MARK: Types, layouts, provider keys, channels, tokens

    func activityType(bundleId: BundleID, name: String) throws -> ActivityType? {
        let key = PostgresTransaction.typeKey(bundleId: bundleId, name: name)
        if writing, let cached = session.cache.activityTypes[key] { return cached }
        let type = try session.value("SELECT body FROM activityType WHERE bundleId = $1 AND name = $2", [bundleId, name], as: String.self)
            .map { try WireFormat.decoder().decode(ActivityType.self, from: Data($0.utf8)) }
        if writing { session.cache.activityTypes[key] = .some(type) }
        return type
    }

    func activityTypes(bundleId: BundleID) throws -> [ActivityType] {
        try session.values("SELECT body FROM activityType WHERE bundleId = $1 ORDER BY name", [bundleId], as: String.self)
            .map { try WireFormat.decoder().decode(ActivityType.self, from: Data($0.utf8)) }
    }

    func layout(bundleId: BundleID, attributesType: String) throws -> LayoutRecord? {
        // A change reads a layout to number the next revision.
        try session.lock("layout:\(bundleId):\(attributesType)")
        return try session.row("SELECT * FROM layout WHERE bundleId = $1 AND attributesType = $2", [bundleId, attributesType], Rows.layout)
    }

    func layouts(bundleId: BundleID) throws -> [LayoutRecord] {
        try session.rows("SELECT * FROM layout WHERE bundleId = $1 ORDER BY attributesType", [bundleId], Rows.layout)
    }

    func providerKeys(bundleId: BundleID?, keyId: String?) throws -> [ProviderKey] {
        try session.rows(
            "SELECT * FROM providerKey WHERE ($1::text IS NULL OR bundleId = $1) AND ($2::text IS NULL OR keyId = $2) ORDER BY bundleId, keyId",
            [bundleId, keyId]
        ) { row in
            ProviderKey(
                keyId: try row["keyId"], teamId: try row["teamId"], bundleId: try row["bundleId"], publicKey: try row["publicKey"],
                createdAt: try row.date("createdAt")
            )
        }
    }

    func channel(_ id: String, bundleId: BundleID) throws -> BroadcastChannel? {
        try session.row("SELECT * FROM channel WHERE id = $1 AND bundleId = $2", [id, bundleId], Rows.channel)
    }

    func channels(bundleId: BundleID) throws -> [BroadcastChannel] {
        try session.rows("SELECT * FROM channel WHERE bundleId = $1 ORDER BY createdAt, id", [bundleId], Rows.channel)
    }

    func storedMessage(channelId: String) throws -> StoredMessage? {
        let stored = try session.row("SELECT message, messageExpiresAt FROM channel WHERE id = $1", [channelId]) { row in
            (try row["message", as: String?.self], try row["messageExpiresAt", as: Double?.self])
        }
        guard let (message, expires) = stored, let message, let expires else { return nil }
        return StoredMessage(
            change: try WireFormat.decoder().decode(Activity.PushedChange.self, from: Data(message.utf8)),
            expires: Date(timeIntervalSince1970: expires)
        )
    }

    func token(_ token: String) throws -> TokenLookup {
        try session.row("SELECT * FROM pushToken WHERE token = $1", [token]) { row -> TokenLookup in
            let bundleId: String = try row["bundleId"]
            if let retiredAt = try row.optionalDate("retiredAt") {
                return .retired(at: retiredAt, reason: try row["retiredReason", as: String?.self] ?? "", bundleId: bundleId)
            }
            if try row["kind", as: String.self] == "pushToStart" {
                return .pushToStart(try row["deviceId"], bundleId: bundleId)
            }
            return .activity(try row["activityId"], bundleId: bundleId)
        } ?? .unknown
    }

    func pushToStartToken(deviceId: DeviceID, bundleId: BundleID) throws -> String? {
        try session.value(
            "SELECT token FROM pushToken WHERE kind = 'pushToStart' AND deviceId = $1 AND bundleId = $2 AND retiredAt IS NULL",
            [deviceId, bundleId]
        )
    }

    func pushToStartHolders() throws -> [PushToStartHolder] {
        try session.rows("SELECT deviceId, bundleId FROM pushToken WHERE kind = 'pushToStart' AND retiredAt IS NULL") { row in
            PushToStartHolder(deviceId: try row["deviceId"], bundleId: try row["bundleId"])
        }
    }

    // MARK: Delivery to real phones

    func deliveryCredentials(bundleId: BundleID) throws -> [StoredCredential] {
        try session.rows("SELECT * FROM deliveryCredential WHERE bundleId = $1 ORDER BY environment", [bundleId], Rows.credential)
    }

    func refusedCredentials() throws -> [DeliveryCredential] {
        try session.rows("SELECT * FROM deliveryCredential WHERE failure IS NOT NULL ORDER BY bundleId, environment", [], Rows.credential)
            .map(\.credential)
    }

    func pushToStartToken(deviceId: DeviceID, bundleId: BundleID, attributesType: String) throws -> PhoneToken? {
        try session.row(
            """
            SELECT * FROM phoneToken WHERE kind = 'pushToStart' AND deviceId = $1 AND bundleId = $2 AND attributesType = $3
            AND retiredAt IS NULL ORDER BY createdAt DESC LIMIT 1
            """,
            [deviceId, bundleId, attributesType], Rows.phoneToken
        )
    }

    func updateToken(activityId: ActivityID) throws -> PhoneToken? {
        try session.row(
            "SELECT * FROM phoneToken WHERE kind = 'update' AND activityId = $1 AND retiredAt IS NULL ORDER BY createdAt DESC LIMIT 1",
            [activityId], Rows.phoneToken
        )
    }

    func phoneToken(_ token: String) throws -> PhoneToken? {
        try session.row("SELECT * FROM phoneToken WHERE token = $1", [token], Rows.phoneToken)
    }

    func phoneTokens(deviceId: DeviceID) throws -> [PhoneToken] {
        try session.rows("SELECT * FROM phoneToken WHERE deviceId = $1 ORDER BY createdAt DESC, token", [deviceId], Rows.phoneToken)
    }

    func phoneActivity(_ id: ActivityID) throws -> PhoneActivity? {
        // In a change, read under its activity's lock (which reads it too).
        if writing {
            if let cached = session.cache.phoneActivities[id] { return cached }
            if try activity(id) != nil, let cached = session.cache.phoneActivities[id] { return cached }
        }
        return try session.row("SELECT * FROM phoneActivity WHERE activityId = $1", [id], Rows.phoneActivity)
    }

    func delivery(_ id: Int64) throws -> Delivery? {
        guard writing else { return try session.row("SELECT * FROM delivery WHERE id = $1", [id], Rows.delivery) }
        return try locked("SELECT * FROM delivery WHERE id = $1", [id], exists: "SELECT 1 FROM delivery WHERE id = $1", what: "delivery \(id)", Rows.delivery)
    }

    func unfinishedDeliveries(orderKey: String) throws -> [Delivery] {
        try session.rows(
            "SELECT * FROM delivery WHERE orderKey = $1 AND state IN ('pending', 'sending', 'held') ORDER BY id\(try session.rowsLock())",
            [orderKey], Rows.delivery
        )
    }

    func dueDeliveries(at date: Date, limit: Int) throws -> [Delivery] {
        // The oldest unfinished delivery of each order key, when it is pending and due or its
        // lease has run out: one at a time per activity keeps its order.
        try session.rows(
            """
            SELECT * FROM delivery d
            WHERE d.state IN ('pending', 'sending')
              AND ((d.state = 'pending' AND d.nextAttemptAt <= $1) OR (d.state = 'sending' AND d.leaseUntil <= $1))
              AND d.id = (SELECT MIN(e.id) FROM delivery e WHERE e.orderKey = d.orderKey AND e.state IN ('pending', 'sending', 'held'))
            ORDER BY d.nextAttemptAt, d.id LIMIT $2\(skipLocked)
            """,
            [date.timeIntervalSince1970, limit], Rows.delivery
        )
    }

    func heldDeliveries(bundleId: BundleID) throws -> [Delivery] {
        try session.rows("SELECT * FROM delivery WHERE state = 'held' AND bundleId = $1 ORDER BY id\(try session.rowsLock())", [bundleId], Rows.delivery)
    }

    func claimedDeliveries() throws -> [Delivery] {
        try session.rows("SELECT * FROM delivery WHERE state = 'sending' ORDER BY id\(try session.rowsLock())", [], Rows.delivery)
    }

    func nextDeliveryAttempt() throws -> Date? {
        try session.value(
            "SELECT MIN(CASE state WHEN 'sending' THEN leaseUntil ELSE nextAttemptAt END) FROM delivery WHERE state IN ('pending', 'sending')",
            as: Double?.self
        )?.map(Date.init(timeIntervalSince1970:))
    }

    func deliveryBacklog(bundleId: BundleID?) throws -> DeliveryBacklog {
        try session.row(
            """
            SELECT COUNT(*) AS depth, MIN(createdAt) AS oldest, COUNT(*) FILTER (WHERE state = 'pending' AND attempts > 0) AS retrying,
                COUNT(*) FILTER (WHERE state = 'held') AS held
            FROM delivery WHERE state IN ('pending', 'sending', 'held') AND ($1::text IS NULL OR bundleId = $1)
            """,
            [bundleId]
        ) { row in
            DeliveryBacklog(
                depth: try row["depth"], oldest: try row.optionalDate("oldest"), retrying: try row["retrying"], held: try row["held"]
            )
        } ?? DeliveryBacklog(depth: 0, oldest: nil)
    }

    // MARK: Events

    func events(after id: EventID, filter: EventFilter, limit: Int) throws -> [EncodedEvent] {
        try session.rows(
            """
            SELECT * FROM event WHERE id > $1 AND ($2::text IS NULL OR bundleId = $2) AND ($3::text IS NULL OR deviceId = $3)
            AND ($4::text IS NULL OR activityId = $4) ORDER BY id LIMIT $5
            """,
            [id, filter.bundleId, filter.deviceId, filter.activityId, limit], Rows.event
        ).compactMap { $0 }
    }

    func history(of id: ActivityID) throws -> [EncodedEvent] {
        try session.rows("SELECT * FROM event WHERE activityId = $1 ORDER BY id", [id], Rows.event).compactMap { $0 }
    }

    func lastEventID() throws -> EventID {
        try session.value("SELECT MAX(id) FROM event", as: Int64?.self).flatMap { $0 } ?? 0
    }
}

/// Rows to values.
enum Rows {
    static func app(_ row: Columns) throws -> App {
        App(
            bundleId: try row["bundleId"], name: try row["name"], createdAt: try row.date("createdAt"), strictPushes: try row["strictPushes"],
            deliveryPaused: try row["deliveryPaused"]
        )
    }

    static func device(_ row: Columns) throws -> Device {
        Device(id: try row["id"], name: try row["name"], createdAt: try row.date("createdAt"))
    }

    static func layout(_ row: Columns) throws -> LayoutRecord {
        LayoutRecord(
            bundleId: try row["bundleId"], attributesType: try row["attributesType"],
            layout: try WireFormat.decoder().decode(JSONValue.self, from: Data(try row["body", as: String.self].utf8)),
            revision: try row["revision"], updatedAt: try row.date("updatedAt")
        )
    }

    static func channel(_ row: Columns) throws -> BroadcastChannel {
        BroadcastChannel(
            id: try row["id"], bundleId: try row["bundleId"], storagePolicy: try row["storagePolicy"], createdAt: try row.date("createdAt"),
            environment: try row["environment", as: String?.self].flatMap(APNsEnvironment.init(rawValue:))
        )
    }

    static func credential(_ row: Columns) throws -> StoredCredential {
        StoredCredential(
            credential: DeliveryCredential(
                bundleId: try row["bundleId"], environment: APNsEnvironment(rawValue: try row["environment"]) ?? .development,
                teamId: try row["teamId"], keyId: try row["keyId"], url: try row["url"], caCertificate: try row["caCertificate"],
                createdAt: try row.date("createdAt"), failure: try row["failure"]
            ),
            privateKey: try row["privateKey"]
        )
    }

    static func phoneToken(_ row: Columns) throws -> PhoneToken {
        var token = PhoneToken(
            token: try row["token"], kind: PhoneToken.Kind(rawValue: try row["kind"]) ?? .update, bundleId: try row["bundleId"],
            deviceId: try row["deviceId"], attributesType: try row["attributesType"], activityId: try row["activityId"],
            environment: APNsEnvironment(rawValue: try row["environment"]) ?? .development, createdAt: try row.date("createdAt")
        )
        token.retiredAt = try row.optionalDate("retiredAt")
        token.retiredReason = try row["retiredReason"]
        token.lastAt = try row.optionalDate("lastAt")
        token.lastStatus = try row["lastStatus"]
        token.lastReason = try row["lastReason"]
        return token
    }

    static func phoneActivity(_ row: Columns) throws -> PhoneActivity {
        let budgeted = try row["budgeted", as: String.self].split(separator: ",").compactMap { Double($0) }
        return PhoneActivity(
            activityId: try row["activityId"], bundleId: try row["bundleId"], deviceId: try row["deviceId"],
            environment: APNsEnvironment(rawValue: try row["environment"]) ?? .development, channelId: try row["channelId"],
            state: PhoneActivity.State(rawValue: try row["state"]) ?? .active, budgeted: budgeted.map(Date.init(timeIntervalSince1970:))
        )
    }

    static func delivery(_ row: Columns) throws -> Delivery {
        Delivery(
            id: try row["id"], orderKey: try row["orderKey"], activityId: try row["activityId"], bundleId: try row["bundleId"],
            deviceId: try row["deviceId"], channelId: try row["channelId"], event: try row["event"], payload: try row["payload"],
            alert: try row["alert"], expiration: try row.optionalDate("expiration"),
            state: Delivery.State(rawValue: try row["state"]) ?? .failed, attempts: try row["attempts"],
            nextAttemptAt: try row.date("nextAttemptAt"), leaseUntil: try row.optionalDate("leaseUntil"),
            createdAt: try row.date("createdAt"), finishedAt: try row.optionalDate("finishedAt"), apnsId: try row["apnsId"]
        )
    }

    /// An event, or `nil` for a type this version does not know.
    static func event(_ row: Columns) throws -> EncodedEvent? {
        guard let type = EventType(rawValue: try row["type"]) else { return nil }
        return EncodedEvent(
            id: try row["id"], type: type, time: try row.date("time"), bundleId: try row["bundleId"], deviceId: try row["deviceId"],
            activityId: try row["activityId"], dataJSON: try row["data"]
        )
    }
}
