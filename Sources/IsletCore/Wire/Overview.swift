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
    /// The store, and what a failover of its database keeps.
    public var store: StoreOverview
    /// What the event stream carried since the node started: updates, drops, requests to Apple
    /// and its answers.
    public var counts: EventCounts

    public init(
        bundleId: BundleID?, time: Date, population: Population, activities: [ActivityState: Int], delivery: DeliveryOverview,
        store: StoreOverview, counts: EventCounts
    ) {
        self.bundleId = bundleId
        self.time = time
        self.population = population
        self.activities = Dictionary(uniqueKeysWithValues: ActivityState.allCases.map { ($0.rawValue, activities[$0] ?? 0) })
        self.delivery = delivery
        self.store = store
        self.counts = counts
    }
}

/// What the store is, where, and what a failover keeps: `/healthz`'s `store`, and the
/// console's overview.
public struct StoreOverview: Codable, Hashable, Sendable {
    /// `sqlite` or `postgresql`.
    public var kind: String
    /// The SQLite file's path, or the database's address without its password.
    public var location: String
    /// Whether other nodes work on the same data (several nodes on PostgreSQL).
    public var shared: Bool
    /// PostgreSQL's: whether an acknowledged change survives a failover (docs/cluster.md §7).
    public var replication: Replication?

    public init(kind: String, location: String, shared: Bool, replication: Replication?) {
        self.kind = kind
        self.location = location
        self.shared = shared
        self.replication = replication
    }
}

/// How a PostgreSQL database replicates its commits, as it says (`SHOW synchronous_standby_names`)
/// and as the node's sessions commit (`synchronous_commit = on`, which every node sets):
/// whether an acknowledged change survives a failover to a standby (docs/cluster.md §7).
public struct Replication: Codable, Hashable, Sendable {
    /// `synchronous`: a commit waits for a standby, so a promoted one has every acknowledged
    /// change. `asynchronous`: the last commits before a failover may be lost.
    public var mode: String
    /// The node's sessions' `synchronous_commit`.
    public var synchronousCommit: String
    /// The server's `synchronous_standby_names` (empty: no synchronous standby).
    public var synchronousStandbyNames: String

    /// The promise the two settings make, in one place: a commit with `synchronous_commit` at
    /// `on`, `remote_write` or `remote_apply`, while the server names a synchronous standby,
    /// waited for that standby.
    public init(synchronousCommit: String, synchronousStandbyNames: String) {
        self.synchronousCommit = synchronousCommit
        self.synchronousStandbyNames = synchronousStandbyNames
        let waits = ["on", "remote_write", "remote_apply"].contains(synchronousCommit)
        mode = waits && !synchronousStandbyNames.trimmingCharacters(in: .whitespaces).isEmpty ? "synchronous" : "asynchronous"
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
