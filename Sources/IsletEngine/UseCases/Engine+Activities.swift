import Foundation
import IsletCore

/// An activity after a change, with what the change did.
public struct Outcome: Sendable {
    /// The activity as committed.
    public var activity: Activity
    /// The events recorded and whether the input was ignored.
    public var transition: Transition
    /// Whether the change created the activity.
    public var created: Bool
    /// The activity in wire format, as written: answering with it saves encoding it again.
    public var body: String?

    /// What the caller should know that did not stop the change (a renewing activity that a
    /// real phone cannot renew), in words.
    public var warnings: [String] = []

    /// Creates an outcome.
    public init(activity: Activity, transition: Transition, created: Bool, body: String? = nil) {
        self.activity = activity
        self.transition = transition
        self.created = created
        self.body = body
    }
}

extension Engine {
    // MARK: Changes

    /// Starts an activity for an app, or refuses it with ActivityKit's reason.
    ///
    /// - Parameters:
    ///   - request: What the app asks for.
    ///   - bundleId: The app.
    public func start(_ request: ActivityRequest, bundleId: BundleID) async throws -> Outcome {
        let rules = self.rules
        return try await write { tx in
            let context = try StartContext.read(bundleId: bundleId, attributesType: request.attributesType, in: tx)
            var outcome = try Self.start(request, bundleId: bundleId, key: nil, rules: rules, in: tx, context: context)
            try tx.deliverStart(of: outcome.activity, alert: request.alert, context: context)
            outcome.warnings = try tx.renewalWarnings(of: outcome.activity)
            return outcome
        }
    }

    /// Applies an update, an end or a user's dismissal to an activity.
    ///
    /// - Parameters:
    ///   - input: What happens.
    ///   - id: The activity.
    ///   - owner: The app whose key asks, or `nil` for the admin: another app's activity is not found.
    /// An id of a renewed activity stands for the live end of its chain (docs/renewal.md): the
    /// answer is the activity the input applied to.
    public func apply(_ input: Activity.Input, to id: ActivityID, owner: BundleID?) async throws -> Outcome {
        try await write(about: id, Self.applying(input, to: id, owner: owner, rules: rules))
    }

    /// `apply`, answering `completion` once the change is committed and published, instead of a
    /// waiting task: for a route served on its event loop (docs/engine.md §9.1). Without the
    /// `Idempotency-Key` claim and the trace span that `write` adds: such a request takes the route.
    public func submit(
        _ input: Activity.Input, to id: ActivityID, owner: BundleID?, completion: @escaping @Sendable (Result<Outcome, any Error>) -> Void
    ) {
        submit(about: id, Self.applying(input, to: id, owner: owner, rules: rules), completion: completion)
    }

    /// `write`, answering `completion` once the commit is published instead of a waiting task
    /// (docs/engine.md §9.1): what a hot route hands the writer.
    func submit<T: Sendable>(
        about activity: ActivityID?, _ work: @escaping @Sendable (any Transaction) throws -> T,
        completion: @escaping @Sendable (Result<T, any Error>) -> Void
    ) {
        let fanOut = self.fanOut
        store.submit(now: clock.now(), about: activity, work) { result in
            switch result {
            case .failure(let error): completion(.failure(error))
            case .success(let committed): fanOut.whenPublished(through: committed.commit) { completion(.success(committed.value)) }
            }
        }
    }

    /// The change `apply` makes, in its transaction.
    private static func applying(
        _ input: Activity.Input, to id: ActivityID, owner: BundleID?, rules: LifecycleRules
    ) -> @Sendable (any Transaction) throws -> Outcome {
        { tx in
            var activity = try tx.loadActivity(following: id, owner: owner)
            let (transition, body) = try tx.change(&activity, input, rules: rules)
            try tx.deliverChange(input, transition: transition, of: activity)
            return Outcome(activity: activity, transition: transition, created: false, body: body)
        }
    }

    /// A person dismisses an activity from a display, once `authorize` — given the activity, in
    /// the same transaction — allows it (a display dismisses only what its device shows).
    public func dismiss(_ id: ActivityID, authorize: @escaping @Sendable (Activity) throws -> Void) async throws -> Outcome {
        try await happenOnPhone(.userDismissal, to: id, authorize: authorize)
    }

    /// A real phone's app reports what ActivityKit told it (the person dismissed the card, the
    /// activity ended on the phone), once `authorize` allows it: the activity is the one the
    /// phone shows, not the live end of its chain. Nothing is sent to the phone, which knows.
    public func report(_ state: PhoneReportState, on id: ActivityID, authorize: @escaping @Sendable (Activity) throws -> Void) async throws -> Outcome {
        try await happenOnPhone(.phoneReport(state), to: id, authorize: authorize)
    }

    /// What happens on the phone itself, in one transaction with the check of who says so.
    private func happenOnPhone(
        _ input: Activity.Input, to id: ActivityID, authorize: @escaping @Sendable (Activity) throws -> Void
    ) async throws -> Outcome {
        let rules = self.rules
        return try await write(about: id) { tx in
            var activity = try tx.loadActivity(id, owner: nil)
            try authorize(activity)
            let (transition, body) = try tx.change(&activity, input, rules: rules)
            try tx.deliverChange(input, transition: transition, of: activity)
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
    public func startOrUpdate(
        key: String, request: ActivityRequest, timestamp: Date?, end: DismissalPolicy?, bundleId: BundleID
    ) async throws -> Outcome {
        let rules = self.rules
        return try await write { tx in
            var outcome: Outcome
            let input: Activity.Input
            if let found = try tx.liveActivity(key: key, bundleId: bundleId) {
                // One renewed while it was looked for: its successor has the key now.
                let live = try tx.liveEnd(of: found)
                outcome = Outcome(activity: live, transition: Transition(), created: false)
                input =
                    if let end {
                        .end(EndRequest(content: request.content, dismissalPolicy: end, timestamp: timestamp))
                    } else {
                        .update(ContentUpdate(content: request.content, alert: request.alert, timestamp: timestamp))
                    }
            } else {
                let context = try StartContext.read(bundleId: bundleId, attributesType: request.attributesType, in: tx)
                outcome = try Self.start(request, bundleId: bundleId, key: key, rules: rules, in: tx, context: context)
                try tx.deliverStart(of: outcome.activity, alert: request.alert, context: context)
                outcome.warnings = try tx.renewalWarnings(of: outcome.activity)
                guard let end else { return outcome }
                input = .end(EndRequest(dismissalPolicy: end, timestamp: timestamp))
            }
            let (transition, body) = try tx.change(&outcome.activity, input, rules: rules)
            try tx.deliverChange(input, transition: transition, of: outcome.activity)
            outcome.transition.payloads += transition.payloads
            outcome.transition.ignored = transition.ignored
            outcome.body = body
            return outcome
        }
    }

    /// The start of an activity, in a transaction: the app, the device, its settings and what
    /// it already holds, the channel, the rules' admission; a channel that keeps its latest
    /// message hands it over at once.
    ///
    /// - Parameter predecessor: The live activity this one renews: it leaves in the same
    ///   transaction, so it does not count against the limits.
    ///   - context: What the start reads of its app, when the caller has read it (a send's
    ///     batch reads it once for all its phones); read here otherwise.
    static func start(
        _ request: ActivityRequest, bundleId: BundleID, key: String?, rules: LifecycleRules, in tx: any Transaction,
        renewing predecessor: Activity? = nil, context: StartContext? = nil
    ) throws -> Outcome {
        let type: ActivityType?
        if let context {
            type = context.type
        } else {
            _ = try tx.requireApp(bundleId)
            type = try tx.activityType(bundleId: bundleId, name: request.attributesType)
        }
        _ = try tx.requireDevice(request.deviceId)
        let leaving = predecessor == nil ? 0 : 1
        let live = try tx.liveActivityCounts(deviceId: request.deviceId, bundleId: bundleId)
        let occupancy = Occupancy(
            activitiesEnabled: try tx.activitiesEnabled(deviceId: request.deviceId, bundleId: bundleId),
            appActivities: live.app - leaving, deviceActivities: live.device - leaving
        )
        var channel: BroadcastChannel?
        if case .channel(let channelId) = request.pushType {
            channel = try tx.channel(channelId, bundleId: bundleId)
            guard channel != nil else {
                throw IsletError(.channelNotFound, "No broadcast channel \(channelId) for \(bundleId); an invalid channel makes a start fail.")
            }
        }
        var (activity, transition) = try Activity.request(
            request, id: UUID().uuidString, bundleId: bundleId, key: key, pushToken: Tokens.generate(),
            occupancy: occupancy, now: tx.now, rules: rules, type: type, renewing: predecessor
        )
        // A channel that keeps its most recent message hands it to activities that join later.
        if let channel, channel.storagePolicy == 1, let message = try tx.storedMessage(channelId: channel.id), tx.now < message.expires {
            let delivered = try activity.handle(
                .push(message.change, Activity.PushDelivery(budgetPerHour: nil)), now: tx.now, rules: rules, type: type
            )
            transition.payloads += delivered.payloads
        }
        let body = try tx.keep(activity)
        if let token = activity.pushToken {
            try tx.addToken(token, holder: .activity(activity.id, deviceId: activity.deviceId, bundleId: bundleId))
        }
        try tx.record(transition, of: activity)
        tx.effects.count(transition)
        return Outcome(activity: activity, transition: transition, created: true, body: body)
    }

    // MARK: Reads

    /// One activity — for an id of a renewed activity, the live end of its chain; another app's
    /// is not found.
    public func activity(_ id: ActivityID, owner: BundleID?) async throws -> Activity {
        try await read { store in try store.loadActivity(following: id, owner: owner) }
    }

    /// A page of the activities a filter selects, in the order a device shows them.
    public func activities(_ filter: ActivityFilter) async throws -> Page<Activity> {
        try await read { store in filter.page.page(of: try store.activities(filter).map { (item: $0.activity, place: $0.place) }) }
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
        let candidates = try await read { store in try store.activityIDs(prefix: prefix, bundleId: owner, limit: 6) }
        switch candidates.count {
        case 0: throw IsletError(.activityNotFound, "No activity's id starts with \(prefix).")
        case 1: return candidates[0]
        default:
            let listed = candidates.prefix(5).joined(separator: ", ") + (candidates.count > 5 ? ", …" : "")
            throw IsletError(.invalidRequest, "\(prefix) starts more than one activity's id (\(listed)); give more of it.")
        }
    }

    /// An activity's whole history, oldest first; another app's activity is not found.
    public func history(of id: ActivityID, owner: BundleID?) async throws -> [EncodedEvent] {
        try await read { store in
            _ = try store.loadActivity(id, owner: owner)
            return try store.history(of: id)
        }
    }

    /// How many activities are in each state, for metrics.
    public func activityCounts() async throws -> [ActivityState: Int] {
        try await read { store in try store.activityCounts(bundleId: nil) }
    }
}

/// What a start reads of its app: the app, the activity type it names, and whether the app
/// delivers to iPhones (credentials for Apple) and to Android phones (one for FCM). Read once
/// by a send's batch for all its phones, and by a single start for both its steps.
struct StartContext: Sendable {
    let app: App
    let type: ActivityType?
    let deliversToApple: Bool
    let deliversToAndroid: Bool

    /// `appNotFound` for an app that is not there.
    static func read(bundleId: BundleID, attributesType: String, in tx: any Transaction) throws -> StartContext {
        StartContext(
            app: try tx.requireApp(bundleId), type: try tx.activityType(bundleId: bundleId, name: attributesType),
            deliversToApple: !(try tx.deliveryCredentials(bundleId: bundleId).isEmpty), deliversToAndroid: try tx.fcmCredential(bundleId: bundleId) != nil
        )
    }
}
