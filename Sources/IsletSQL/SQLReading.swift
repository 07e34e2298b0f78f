import Foundation
import IsletCore
import IsletEngine

/// The engine's reads as SQL, written once for both databases, over one session: a reader's
/// connection, or a write transaction (which sees its own writes).
///
/// In a write transaction of a store with several writers (`session.locking`), a read locks
/// what the change will decide on (docs/cluster.md, "Isolation"): an activity's row — which
/// also guards its phone state and its deliveries —, a device's count, an app's key, a token's
/// holder, a layout's revision. Due work is read `SKIP LOCKED`: two writers claiming deadlines
/// or deliveries at once take different ones. On SQLite every lock clause is empty.
public protocol SQLReading: StoreReading {
    associatedtype Session: SQLSession
    var session: Session { get }
}

/// Reads on a reader's connection.
public struct SQLSnapshot<Session: SQLSession>: SQLReading {
    public let session: Session

    public init(session: Session) {
        self.session = session
    }
}

/// The states of a live activity, as the `activity` indexes' conditions write them.
let liveStates = "('pending', 'active', 'stale')"

extension SQLReading {
    /// The row of `sql`, locked as `session.rowLock` says. A row another transaction holds is
    /// left out at first (`SKIP LOCKED`): when nothing was found, `exists` (the same values)
    /// tells a held row from none, and a held one is `SQLBusy`.
    func locked<T>(
        _ sql: String, _ values: [(any SQLBindable)?], of alias: String? = nil, exists: String, what: String,
        activity: ActivityID? = nil, _ read: (any SQLRow) throws -> T
    ) throws -> T? {
        if let found = try session.rows(sql + session.rowLock(of: alias), values, reading: activity, read).first {
            return found
        }
        if session.locking == .nowait, !(try session.rows(exists, values, reading: activity) { _ in () }.isEmpty) {
            throw SQLBusy(what: what)
        }
        return nil
    }

    // MARK: Apps and devices

    public func app(_ bundleId: BundleID) throws -> App? {
        try session.row("SELECT * FROM app WHERE bundleId = $1", [bundleId], SQLRows.app)
    }

    public func apps() throws -> [App] {
        try session.rows("SELECT * FROM app ORDER BY bundleId", [], SQLRows.app)
    }

    public func device(_ id: DeviceID) throws -> Device? {
        try session.row("SELECT * FROM device WHERE id = $1", [id], SQLRows.device)
    }

    public func devices() throws -> [Device] {
        try session.rows("SELECT * FROM device ORDER BY id", [], SQLRows.device)
    }

    public func devices(after id: DeviceID?, limit: Int) throws -> [Device] {
        try session.rows("SELECT * FROM device WHERE id > $1 ORDER BY id LIMIT $2", [id ?? "", limit], SQLRows.device)
    }

    public func settings(deviceId: DeviceID, bundleId: BundleID) throws -> AppSettings {
        var settings = AppSettings(bundleId: bundleId, deviceId: deviceId)
        _ = try session.row("SELECT * FROM appSettings WHERE deviceId = $1 AND bundleId = $2", [deviceId, bundleId]) { row in
            settings.activitiesEnabled = try row["activitiesEnabled"]
            settings.frequentUpdates = try row["frequentUpdates"]
        }
        settings.pushToStartToken = try pushToStartToken(deviceId: deviceId, bundleId: bundleId)
        (settings.fcmToken, settings.fcmInstallationId) = try issuedFCMAddresses(deviceId: deviceId, bundleId: bundleId)
        return settings
    }

    public func activitiesEnabled(deviceId: DeviceID, bundleId: BundleID) throws -> Bool {
        try session.value("SELECT activitiesEnabled FROM appSettings WHERE deviceId = $1 AND bundleId = $2", [deviceId, bundleId], as: Bool.self)
            ?? AppSettings(bundleId: bundleId, deviceId: deviceId).activitiesEnabled
    }

    public func keyOwner(hash: String) throws -> KeyOwner? {
        let owner = try session.row("SELECT bundleId, deviceId FROM apiKey WHERE hash = $1", [hash]) { row -> KeyOwner in
            let (bundleId, deviceId) = (try row["bundleId", as: String?.self], try row["deviceId", as: String?.self])
            // An installation's credential: its app's, for its device (docs/installations.md).
            if let bundleId, let deviceId { return .installation(id: deviceId, bundleId: bundleId) }
            if let bundleId { return .app(bundleId) }
            if let deviceId { return .device(deviceId) }
            return .admin
        }
        if let owner { return owner }
        // A client key, until it is revoked.
        return try session.row("SELECT id, bundleId FROM clientKey WHERE hash = $1 AND revokedAt IS NULL", [hash]) { row -> KeyOwner in
            .client(id: try row["id"], bundleId: try row["bundleId"])
        }
    }

    // MARK: Activities

    public func activity(_ id: ActivityID) throws -> Activity? {
        guard session.writing else {
            return try session.values("SELECT body FROM activity WHERE id = $1", [id], as: String.self).first
                .map { body in try SQLRows.activity(id, body: body) }
        }
        // Read (and locked) already in this transaction: as it read it, or as a change wrote it.
        if session.caches, let cached = session.cache.activities[id] { return cached }
        // Under the activity's lock, its phone state too: a change reads both, in one trip.
        let found = try locked(
            SQLQueries.activityWithPhone + " WHERE a.id = $1", [id], of: "a", exists: "SELECT 1 FROM activity WHERE id = $1",
            what: "activity \(id)", activity: id, SQLRows.activityWithPhone
        )
        guard let (_, activity, phone) = found else { return nil }
        session.cache.activities[id] = activity
        session.cache.phoneActivities[id] = .some(phone)
        return activity
    }

    /// The activities a query selects; it must select `body` first.
    func activities(_ sql: String, _ values: [(any SQLBindable)?]) throws -> [Activity] {
        let decoder = WireFormat.decoder()
        return try session.values(sql, values, as: String.self).map { body in try decoder.decode(Activity.self, from: Data(body.utf8)) }
    }

    public func activities(_ filter: ActivityFilter) throws -> [(activity: Activity, place: ActivityPlace)] {
        let (sql, values) = SQLQueries.listing(filter, dialect: session.dialect)
        let decoder = WireFormat.decoder()
        return try session.rows(sql, values) { row in
            let place = ActivityPlace(score: try row["relevanceScore"], start: try row["startTime"], id: try row["id"])
            return (try decoder.decode(Activity.self, from: Data(try row["body", as: String.self].utf8)), place)
        }
    }

    public func activityIDs(prefix: String, bundleId: BundleID?, limit: Int) throws -> [ActivityID] {
        // "~" sorts after every character of an id: the range is exactly the ids with the prefix.
        let id = session.dialect.bytewise("id")
        var conditions = SQLConditions()
        conditions.append { value in "\(id) >= \(value(prefix)) AND \(id) < \(value(prefix + "~"))" }
        conditions.equal("bundleId", bundleId)
        let limit = conditions.value(limit)
        return try session.values("SELECT id FROM activity \(conditions.whereClause) ORDER BY \(id) LIMIT \(limit)", conditions.values)
    }

    public func liveActivity(key: String, bundleId: BundleID) throws -> Activity? {
        let newest = { (column: String) in
            "SELECT \(column) FROM activity WHERE bundleId = $1 AND key = $2 AND state IN \(liveStates) ORDER BY createdAt DESC LIMIT 1"
        }
        guard session.writing else { return try activities(newest("body"), [bundleId, key]).first }
        // The key is locked before it is looked for (a start under it makes the first), and the
        // activity found is read under its own lock.
        try session.lock("key:\(bundleId):\(key)")
        return try session.value(newest("id"), [bundleId, key], as: String.self).flatMap { try activity($0) }
    }

    public func liveActivityCounts(deviceId: DeviceID, bundleId: BundleID) throws -> (app: Int, device: Int) {
        // Counted under the device's lock: starts on one device take turns with the count.
        try session.lock("device:\(deviceId)")
        return try session.row(
            """
            SELECT COALESCE(SUM(CASE WHEN bundleId = $2 THEN 1 ELSE 0 END), 0) AS app, COUNT(*) AS device
            FROM activity WHERE deviceId = $1 AND state IN \(liveStates)
            """,
            [deviceId, bundleId]
        ) { row in (app: try row["app", as: Int.self], device: try row["device", as: Int.self]) } ?? (0, 0)
    }

    public func liveActivities(channelId: String, bundleId: BundleID) throws -> [Activity] {
        try activities(
            "SELECT body FROM activity WHERE channelId = $1 AND bundleId = $2 AND state IN \(liveStates) ORDER BY id\(try session.rowsLock())",
            [channelId, bundleId]
        )
    }

    public func shownActivities(bundleId: BundleID, deviceId: DeviceID?, attributesType: String?) throws -> [Activity] {
        var conditions = SQLConditions()
        conditions.equal("bundleId", bundleId)
        conditions.equal("deviceId", deviceId)
        conditions.equal("attributesType", attributesType)
        return try activities(
            "SELECT body FROM activity \(conditions.whereClause) AND state != 'dismissed' ORDER BY id\(try session.rowsLock())", conditions.values
        )
    }

    public func liveActivitiesWithPushTokens() throws -> [Activity] {
        let token = session.dialect.jsonText("body", key: "pushToken")
        return try activities(
            "SELECT body FROM activity WHERE state IN \(liveStates) AND \(token) IS NOT NULL ORDER BY id\(try session.rowsLock())", []
        )
    }

    public func dueActivities(at date: Date, limit: Int) throws -> [Activity] {
        try activities(
            "SELECT body FROM activity WHERE deadline <= $1 ORDER BY deadline LIMIT $2\(session.skipLocked)", [date.timeIntervalSince1970, limit]
        )
    }

    public func nextDeadline() throws -> Date? {
        try session.value("SELECT MIN(deadline) FROM activity", as: Double?.self)?.map(Date.init(timeIntervalSince1970:))
    }

    public func activityCounts(bundleId: BundleID?) throws -> [ActivityState: Int] {
        var counts = Dictionary(uniqueKeysWithValues: ActivityState.allCases.map { ($0, 0) })
        var conditions = SQLConditions()
        conditions.equal("bundleId", bundleId)
        _ = try session.rows("SELECT state, COUNT(*) AS count FROM activity \(conditions.whereClause) GROUP BY state", conditions.values) { row in
            if let state = ActivityState(rawValue: try row["state"]) {
                counts[state] = try row["count", as: Int.self]
            }
        }
        return counts
    }

    public func population(bundleId: BundleID?) throws -> Population {
        let read = { (row: any SQLRow) in Population(apps: try row["apps"], devices: try row["devices"], phones: try row["phones"]) }
        guard let bundleId else {
            return try session.row(
                """
                SELECT (SELECT COUNT(*) FROM app) AS apps, (SELECT COUNT(*) FROM device) AS devices,
                    (SELECT COUNT(DISTINCT deviceId) FROM phoneToken WHERE retiredAt IS NULL) AS phones
                """,
                [], read
            ) ?? Population(apps: 0, devices: 0, phones: 0)
        }
        return try session.row(
            """
            SELECT (SELECT COUNT(*) FROM app WHERE bundleId = $1) AS apps,
                (SELECT COUNT(DISTINCT deviceId) FROM activity WHERE bundleId = $1) AS devices,
                (SELECT COUNT(DISTINCT deviceId) FROM phoneToken WHERE retiredAt IS NULL AND bundleId = $1) AS phones
            """,
            [bundleId], read
        ) ?? Population(apps: 0, devices: 0, phones: 0)
    }

    // MARK: Types, layouts, provider keys, channels, tokens

    public func activityType(bundleId: BundleID, name: String) throws -> ActivityType? {
        let key = TransactionCache.typeKey(bundleId: bundleId, name: name)
        let caching = session.caches && session.writing
        if caching, let cached = session.cache.activityTypes[key] { return cached }
        let type = try session.value("SELECT body FROM activityType WHERE bundleId = $1 AND name = $2", [bundleId, name], as: String.self)
            .map { try WireFormat.decoder().decode(ActivityType.self, from: Data($0.utf8)) }
        if caching { session.cache.activityTypes[key] = .some(type) }
        return type
    }

    public func activityTypes(bundleId: BundleID) throws -> [ActivityType] {
        try session.values("SELECT body FROM activityType WHERE bundleId = $1 ORDER BY name", [bundleId], as: String.self)
            .map { try WireFormat.decoder().decode(ActivityType.self, from: Data($0.utf8)) }
    }

    public func layout(bundleId: BundleID, attributesType: String) throws -> LayoutRecord? {
        // A change reads a layout to number the next revision.
        try session.lock("layout:\(bundleId):\(attributesType)")
        return try session.row("SELECT * FROM layout WHERE bundleId = $1 AND attributesType = $2", [bundleId, attributesType], SQLRows.layout)
    }

    public func layouts(bundleId: BundleID) throws -> [LayoutRecord] {
        try session.rows("SELECT * FROM layout WHERE bundleId = $1 ORDER BY attributesType", [bundleId], SQLRows.layout)
    }

    public func providerKeys(bundleId: BundleID?, keyId: String?) throws -> [ProviderKey] {
        var conditions = SQLConditions()
        conditions.equal("bundleId", bundleId)
        conditions.equal("keyId", keyId)
        return try session.rows("SELECT * FROM providerKey \(conditions.whereClause) ORDER BY bundleId, keyId", conditions.values, SQLRows.providerKey)
    }

    public func channel(_ id: String, bundleId: BundleID) throws -> BroadcastChannel? {
        try session.row("SELECT * FROM channel WHERE id = $1 AND bundleId = $2", [id, bundleId], SQLRows.channel)
    }

    public func channels(bundleId: BundleID) throws -> [BroadcastChannel] {
        try session.rows("SELECT * FROM channel WHERE bundleId = $1 ORDER BY createdAt, id", [bundleId], SQLRows.channel)
    }

    public func storedMessage(channelId: String) throws -> StoredMessage? {
        let stored = try session.row("SELECT message, messageExpiresAt FROM channel WHERE id = $1", [channelId]) { row in
            (try row["message", as: String?.self], try row["messageExpiresAt", as: Double?.self])
        }
        guard let (message, expires) = stored, let message, let expires else { return nil }
        return StoredMessage(
            change: try WireFormat.decoder().decode(Activity.PushedChange.self, from: Data(message.utf8)),
            expires: Date(timeIntervalSince1970: expires)
        )
    }

    public func token(_ token: String) throws -> TokenLookup {
        try session.row("SELECT * FROM pushToken WHERE token = $1", [token]) { row -> TokenLookup in
            let bundleId: String = try row["bundleId"]
            if let retiredAt = try row.optionalDate("retiredAt") {
                return .retired(at: retiredAt, reason: try row["retiredReason", as: String?.self] ?? "", bundleId: bundleId)
            }
            switch try row["kind", as: String.self] {
            case "pushToStart": return .pushToStart(try row["deviceId"], bundleId: bundleId)
            case "fcm": return .fcm(try row["deviceId"], bundleId: bundleId)
            case "fid": return .fid(try row["deviceId"], bundleId: bundleId)
            default: break
            }
            return .activity(try row["activityId"], bundleId: bundleId)
        } ?? .unknown
    }

    public func pushToStartToken(deviceId: DeviceID, bundleId: BundleID) throws -> String? {
        try session.value(
            "SELECT token FROM pushToken WHERE kind = 'pushToStart' AND deviceId = $1 AND bundleId = $2 AND retiredAt IS NULL",
            [deviceId, bundleId]
        )
    }

    public func pushToStartHolders() throws -> [PushToStartHolder] {
        try session.rows("SELECT deviceId, bundleId FROM pushToken WHERE kind = 'pushToStart' AND retiredAt IS NULL") { row in
            PushToStartHolder(deviceId: try row["deviceId"], bundleId: try row["bundleId"])
        }
    }

    // MARK: Events

    public func events(after id: EventID, filter: EventFilter, limit: Int) throws -> [EncodedEvent] {
        var conditions = SQLConditions()
        conditions.append { value in "id > \(value(id))" }
        conditions.equal("bundleId", filter.bundleId)
        conditions.equal("deviceId", filter.deviceId)
        conditions.equal("activityId", filter.activityId)
        if let horizon = session.eventHorizon {
            conditions.append { value in "id <= \(value(horizon))" }
        }
        let limit = conditions.value(limit)
        return try session.rows("SELECT * FROM event \(conditions.whereClause) ORDER BY id LIMIT \(limit)", conditions.values, SQLRows.event)
            .compactMap { $0 }
    }

    public func history(of id: ActivityID) throws -> [EncodedEvent] {
        let sql =
            switch session.dialect {
            case .sqlite:
                // Back along the chain from the activity's last event (`ChangeStatements.insertEvent`);
                // it ends where retention deleted the rest.
                """
                WITH RECURSIVE chain(id) AS (
                    SELECT lastEventId FROM activity WHERE id = $1
                    UNION ALL
                    SELECT event.previous FROM event JOIN chain ON event.id = chain.id WHERE event.previous IS NOT NULL
                )
                SELECT event.* FROM chain JOIN event ON event.id = chain.id ORDER BY event.id
                """
            case .postgresql:
                // Events are numbered at commit, several writers' at once: an index keeps them by activity.
                // Every event committed, past the horizon too: a history is no cursor (a stream
                // resumed after its last id starts at most from the horizon), and a change made
                // through another node is in it as soon as it is answered.
                "SELECT * FROM event WHERE activityId = $1 ORDER BY id"
            }
        return try session.rows(sql, [id], SQLRows.event).compactMap { $0 }
    }

    public func lastEventID() throws -> EventID {
        if let horizon = session.eventHorizon { return horizon }
        return try session.value("SELECT MAX(id) FROM event", as: Int64?.self).flatMap { $0 } ?? 0
    }
}

/// The statements whose text depends on what is asked, and those a driver shares.
public enum SQLQueries {
    /// An activity's row with its phone state (`NULL`s when it has none), as a change reads
    /// them: together, under the activity's lock (`SQLRows.activityWithPhone`).
    public static let activityWithPhone = "SELECT a.id AS lockedId, a.body, p.* FROM activity a LEFT JOIN phoneActivity p ON p.activityId = a.id"

    /// A page of activities (`Store.activities`): their body and place, in the listing's
    /// order, one more than the page.
    static func listing(_ filter: ActivityFilter, dialect: SQLDialect) -> (sql: String, values: [(any SQLBindable)?]) {
        var conditions = SQLConditions()
        conditions.equal("bundleId", filter.bundleId)
        conditions.equal("deviceId", filter.deviceId)
        conditions.equal("attributesType", filter.attributesType)
        if let states = filter.states {
            conditions.append { value in "state IN (\(states.sorted().map { value($0.rawValue) }.joined(separator: ", ")))" }
        }
        let id = dialect.bytewise("id")
        if let query = filter.query {
            // "~" sorts after every character of an id: the range is exactly the ids with the prefix.
            conditions.append { value in
                "((\(id) >= \(value(query.uppercased())) AND \(id) < \(value(query.uppercased() + "~"))) "
                    + "OR substr(key, 1, length(\(value(query)))) = \(value(query)))"
            }
        }
        if let updatedSince = filter.updatedSince {
            conditions.append { value in "updatedAt >= \(value(updatedSince.timeIntervalSince1970))" }
        }
        if let after = filter.after {
            // The listing's order as one row value, which the activity_listing indexes seek to.
            conditions.append { value in "(listingScore, startTime, \(id)) > (\(value(-after.score)), \(value(after.start)), \(value(after.id)))" }
        }
        let limit = conditions.value(filter.limit + 1)
        return (
            "SELECT body, relevanceScore, startTime, id FROM activity \(conditions.whereClause) ORDER BY listingScore, startTime, \(id) LIMIT \(limit)",
            conditions.values
        )
    }
}

/// A `WHERE` clause built from optional conditions, each value bound to the next placeholder.
struct SQLConditions {
    private(set) var values: [(any SQLBindable)?] = []
    private var conditions: [String] = []

    /// Binds a value; returns its placeholder.
    mutating func value(_ value: any SQLBindable) -> String {
        values.append(value)
        return "$\(values.count)"
    }

    /// `column = value`, when there is a value.
    mutating func equal(_ column: String, _ given: String?) {
        guard let given else { return }
        conditions.append("\(column) = \(value(given))")
    }

    /// A condition whose values `write` binds as it writes it.
    mutating func append(_ write: (_ value: (any SQLBindable) -> String) -> String) {
        var values = self.values
        let condition = write { value in
            values.append(value)
            return "$\(values.count)"
        }
        self.values = values
        conditions.append(condition)
    }

    /// `WHERE` and the conditions (`WHERE 1 = 1` when there are none, so `AND` may follow).
    var whereClause: String {
        conditions.isEmpty ? "WHERE 1 = 1" : "WHERE " + conditions.joined(separator: " AND ")
    }
}
