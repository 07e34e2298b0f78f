import Foundation

/// `GET /v1/overview`: the figures the console's overview draws — the store's, read in one go,
/// and the totals of what the event stream carried since the node started — for every app with
/// the admin key, for its own with an app key.
public struct Overview: Codable, Hashable, Sendable {
    /// The app the figures are limited to; absent: every app.
    public var bundleId: BundleID?
    /// When the server read them.
    public var time: Date
    /// How many apps, devices and phones.
    public var population: Population
    /// How many activities are in each state (every state named, 0 included).
    public var activities: [String: Int]
    /// How delivery to Apple stands.
    public var delivery: DeliveryOverview
    /// What the event stream carried since the node started: updates, drops, requests to Apple
    /// and its answers.
    public var counts: EventCounts

    public init(
        bundleId: BundleID?, time: Date, population: Population, activities: [ActivityState: Int], delivery: DeliveryOverview,
        counts: EventCounts
    ) {
        self.bundleId = bundleId
        self.time = time
        self.population = population
        self.activities = Dictionary(uniqueKeysWithValues: ActivityState.allCases.map { ($0.rawValue, activities[$0] ?? 0) })
        self.delivery = delivery
        self.counts = counts
    }
}

/// How many apps, devices and phones there are. Limited to one app: that app, the devices that
/// hold its activities, and the phones that hold its current tokens.
public struct Population: Codable, Hashable, Sendable {
    /// Apps.
    public var apps: Int
    /// Devices (virtual or phones).
    public var devices: Int
    /// Devices whose phone reported a current push token (docs/delivery.md).
    public var phones: Int

    public init(apps: Int, devices: Int, phones: Int) {
        self.apps = apps
        self.devices = devices
        self.phones = phones
    }
}

/// The outbox of deliveries to Apple, as `/healthz` reports it.
public struct DeliveryOverview: Codable, Hashable, Sendable {
    /// `ok`, or `degraded` with `reason`.
    public var status: String
    /// Why delivery is not keeping up, when it is not.
    public var reason: String?
    /// Deliveries not finished: waiting, held or being sent.
    public var depth: Int
    /// Of them, waiting to be tried again after Apple did not answer or asked to wait.
    public var retrying: Int
    /// Of them, held: the app has no credentials for the environment, or its delivery is off.
    public var held: Int
    /// When the oldest unfinished delivery was written.
    public var oldest: Date?

    public init(status: String, reason: String?, depth: Int, retrying: Int, held: Int, oldest: Date?) {
        self.status = status
        self.reason = reason
        self.depth = depth
        self.retrying = retrying
        self.held = held
        self.oldest = oldest
    }
}
