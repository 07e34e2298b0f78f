import Foundation
import GRDB
import IsletCore

extension SQLiteStore {
    /// An activity after a change, with what the change did.
    public struct Outcome: Sendable {
        /// The activity as committed.
        public var activity: Activity
        /// The events recorded and whether the input was ignored.
        public var transition: Transition
        /// Whether the change created the activity.
        public var created: Bool
        /// The activity in wire format, as written, when the call wrote it: answering with it
        /// saves encoding it again.
        public var body: String? = nil
    }

    /// Starts an activity for `bundleId`, or refuses it with ActivityKit's reason.
    ///
    /// - Parameters:
    ///   - request: What the app asks for.
    ///   - bundleId: The app.
    ///   - key: A stable key for start-or-update by key.
    ///   - now: The current time.
    public func request(_ request: ActivityRequest, bundleId: BundleID, key: String? = nil, now: Date) async throws
        -> Outcome
    {
        let rules = self.rules
        return try await write(now: now) { db, log in
            try Self.start(request, bundleId: bundleId, key: key, now: now, rules: rules, db: db, log: &log)
        }
    }

    /// Applies an input to an activity by the lifecycle rules.
    ///
    /// - Parameters:
    ///   - input: The update, end, dismissal or deadline.
    ///   - id: The activity.
    ///   - owner: The app whose key asks, or `nil` for the admin: another app's activity is not found.
    ///   - now: The current time.
    public func apply(_ input: Activity.Input, to id: ActivityID, owner: BundleID?, now: Date) async throws -> Outcome {
        let rules = self.rules
        return try await write(now: now) { db, log in
            var activity = try ActivityRow.fetch(id: id, owner: owner, in: db)
            let type = try ActivityTypes.fetch(bundleId: activity.bundleId, name: activity.attributesType, db: db)
            let transition = try activity.handle(input, now: now, rules: rules, type: type)
            let body = try ActivityRow.save(activity, now: now, in: db)
            try log.record(transition, of: activity, in: db)
            return Outcome(activity: activity, transition: transition, created: false, body: body)
        }
    }

    /// Starts an activity under a stable key, or updates (and optionally ends) the live one that
    /// has it: one call per step of a pipeline.
    ///
    /// - Parameters:
    ///   - key: The caller's stable key (a CI job id).
    ///   - request: The activity to start when none is live under the key; its content is the
    ///     update otherwise. Its attributes are kept from the start.
    ///   - timestamp: The update's timestamp.
    ///   - end: When set, the activity ends with this policy after the content is applied.
    ///   - bundleId: The app.
    ///   - now: The current time.
    public func startOrUpdate(
        key: String, request: ActivityRequest, timestamp: Date?, end: DismissalPolicy?, bundleId: BundleID, now: Date
    ) async throws -> Outcome {
        let rules = self.rules
        return try await write(now: now) { db, log in
            let live = try ActivityRow.fetchAll(
                db,
                sql: """
                    SELECT body FROM activity WHERE bundleId = ? AND key = ? AND state IN \(ActivityRow.liveStates)
                    ORDER BY createdAt DESC LIMIT 1
                    """,
                arguments: [bundleId, key]
            ).first
            var outcome: Outcome
            let input: Activity.Input
            if let live {
                outcome = Outcome(activity: live, transition: Transition(), created: false)
                input =
                    if let end {
                        .end(EndRequest(content: request.content, dismissalPolicy: end, timestamp: timestamp))
                    } else {
                        .update(ContentUpdate(content: request.content, alert: request.alert, timestamp: timestamp))
                    }
            } else {
                outcome = try Self.start(request, bundleId: bundleId, key: key, now: now, rules: rules, db: db, log: &log)
                guard let end else { return outcome }
                input = .end(EndRequest(dismissalPolicy: end, timestamp: timestamp))
            }
            let type = try ActivityTypes.fetch(bundleId: bundleId, name: outcome.activity.attributesType, db: db)
            let transition = try outcome.activity.handle(input, now: now, rules: rules, type: type)
            try ActivityRow.save(outcome.activity, now: now, in: db)
            try log.record(transition, of: outcome.activity, in: db)
            outcome.transition.payloads += transition.payloads
            outcome.transition.ignored = transition.ignored
            return outcome
        }
    }

    /// One activity; another app's is not found.
    public func activity(_ id: ActivityID, owner: BundleID?) async throws -> Activity {
        try await read { db in try ActivityRow.fetch(id: id, owner: owner, in: db) }
    }

    /// The id a reference names: a whole id as it is, a prefix as the one activity (of the
    /// owner's, when one is given) whose id starts with it. A prefix that none or several start
    /// with is refused, naming the candidates.
    public func resolve(_ reference: ActivityReference, owner: BundleID?) async throws -> ActivityID {
        let prefix: String
        switch reference {
        case .id(let id): return id
        case .prefix(let start): prefix = start
        }
        let candidates = try await read { db in
            // "~" sorts after every character of an id: the range is exactly the ids with the prefix.
            var sql = "SELECT id FROM activity WHERE id >= ? AND id < ?"
            var arguments: StatementArguments = [prefix, prefix + "~"]
            if let owner {
                sql += " AND bundleId = ?"
                arguments += [owner]
            }
            return try String.fetchAll(db, sql: sql + " ORDER BY id LIMIT 6", arguments: arguments)
        }
        switch candidates.count {
        case 0: throw IsletError(.activityNotFound, "No activity's id starts with \(prefix).")
        case 1: return candidates[0]
        default:
            let listed = candidates.prefix(5).joined(separator: ", ") + (candidates.count > 5 ? ", …" : "")
            throw IsletError(.invalidRequest, "\(prefix) starts more than one activity's id (\(listed)); give more of it.")
        }
    }

    /// The activities a filter selects, in the order a device shows them.
    public func activities(_ filter: ActivityFilter) async throws -> [Activity] {
        try await read { db in
            var conditions: [String] = []
            var arguments: [any DatabaseValueConvertible] = []
            if let bundleId = filter.bundleId {
                conditions.append("bundleId = ?")
                arguments.append(bundleId)
            }
            if let deviceId = filter.deviceId {
                conditions.append("deviceId = ?")
                arguments.append(deviceId)
            }
            if let attributesType = filter.attributesType {
                conditions.append("attributesType = ?")
                arguments.append(attributesType)
            }
            if let states = filter.states {
                conditions.append("state IN (\(states.map { _ in "?" }.joined(separator: ", ")))")
                arguments += states.sorted().map(\.rawValue)
            }
            let whereClause = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
            // The same order as Activity.relevanceOrder, so the limit keeps the most relevant.
            return try ActivityRow.fetchAll(
                db,
                sql: "SELECT body FROM activity \(whereClause) ORDER BY relevanceScore DESC, startTime ASC, id ASC LIMIT ?",
                arguments: StatementArguments(arguments + [filter.limit])
            )
        }
    }

    /// How many activities are in each state, for metrics.
    public func activityCounts() async throws -> [ActivityState: Int] {
        try await read { db in
            var counts = Dictionary(uniqueKeysWithValues: ActivityState.allCases.map { ($0, 0) })
            for row in try Row.fetchAll(db, sql: "SELECT state, COUNT(*) AS count FROM activity GROUP BY state") {
                if let state = ActivityState(rawValue: row["state"]) {
                    counts[state] = row["count"]
                }
            }
            return counts
        }
    }

    static func start(
        _ request: ActivityRequest, bundleId: BundleID, key: String?, now: Date, rules: LifecycleRules, db: Database,
        log: inout EventLog
    ) throws -> Outcome {
        guard try Bool.fetchOne(db, sql: "SELECT 1 FROM app WHERE bundleId = ?", arguments: [bundleId]) != nil else {
            throw IsletError(.appNotFound, "No app \(bundleId).")
        }
        guard try Bool.fetchOne(db, sql: "SELECT 1 FROM device WHERE id = ?", arguments: [request.deviceId]) != nil
        else {
            throw IsletError(.deviceNotFound, "No device \(request.deviceId).")
        }
        let settings = try Self.settings(deviceId: request.deviceId, bundleId: bundleId, in: db)
        let occupancy = Occupancy(
            activitiesEnabled: settings.activitiesEnabled,
            appActivities: try Int.fetchOne(
                db,
                sql: "SELECT COUNT(*) FROM activity WHERE deviceId = ? AND bundleId = ? AND state IN \(ActivityRow.liveStates)",
                arguments: [request.deviceId, bundleId]
            ) ?? 0,
            deviceActivities: try Int.fetchOne(
                db,
                sql: "SELECT COUNT(*) FROM activity WHERE deviceId = ? AND state IN \(ActivityRow.liveStates)",
                arguments: [request.deviceId]
            ) ?? 0
        )
        var channel: BroadcastChannel?
        if case .channel(let channelId) = request.pushType {
            channel = try Channels.fetch(channelId, bundleId: bundleId, db: db)
            guard channel != nil else {
                throw IsletError(.channelNotFound, "No broadcast channel \(channelId) for \(bundleId); an invalid channel makes a start fail.")
            }
        }
        let type = try ActivityTypes.fetch(bundleId: bundleId, name: request.attributesType, db: db)
        var (activity, transition) = try Activity.request(
            request, id: UUID().uuidString, bundleId: bundleId, key: key, pushToken: PushTokens.generate(),
            occupancy: occupancy, now: now, rules: rules, type: type
        )
        // A channel that keeps its most recent message hands it to activities that join later.
        if let channel, let message = try Channels.storedMessage(of: channel, now: now, db: db) {
            let delivered = try activity.handle(.push(message, Activity.PushDelivery(budgetPerHour: nil)), now: now, rules: rules, type: type)
            transition.payloads += delivered.payloads
        }
        let body = try ActivityRow.save(activity, now: now, in: db)
        try PushTokens.recordActivityToken(activity, db: db)
        try log.record(transition, of: activity, in: db)
        return Outcome(activity: activity, transition: transition, created: true, body: body)
    }
}
