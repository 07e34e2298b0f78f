import Foundation
import IsletCore

/// What the engine needs from a store: transactions that load and save, and reads. A store
/// decides nothing — every rule and every use case is the engine's — so a second store
/// (PostgreSQL) implements this protocol and nothing above it changes.
///
/// A store is a long-running service: its writer runs in `run()`, and a write made before it
/// runs waits for it.
public protocol Store: Sendable {
    /// Runs `work` in a write transaction and returns once that transaction has committed, with
    /// the commit's number (see `CommitLog`). Changes that arrive together may share one
    /// transaction, each in its own savepoint: `work` failing undoes only its own writes, and
    /// its error reaches the caller as it was thrown.
    ///
    /// - Parameters:
    ///   - now: The time the change happens at (`Transaction.now`).
    ///   - activity: The activity the change is about, when the caller knows it before it
    ///     runs: a store of several writers reads and locks a batch's activities together, in
    ///     one statement, instead of one round trip per change.
    ///   - work: The use case. It runs on the store's writer: it must not block on anything else.
    /// - Throws: `work`'s error, or `unavailable` when the storage cannot take writes.
    func write<T: Sendable>(
        now: Date, about activity: ActivityID?, _ work: @escaping @Sendable (any Transaction) throws -> T
    ) async throws -> Committed<T>

    /// `write`, answering `completion` instead of a waiting task (docs/engine.md §9.1).
    func submit<T: Sendable>(
        now: Date, about activity: ActivityID?, _ work: @escaping @Sendable (any Transaction) throws -> T,
        completion: @escaping @Sendable (Result<Committed<T>, any Error>) -> Void
    )

    /// Runs `work` on a reader, concurrently with writes; it sees committed data only.
    func read<T: Sendable>(_ work: @escaping @Sendable (any StoreReading) throws -> T) async throws -> T

    /// Every committed transaction, in commit order, for the engine to publish.
    var commits: CommitLog { get }

    /// The current write failure, if writes are failing for the storage's sake (a full disk).
    /// When writes have been failing, or none succeeded for `quietInterval`, it first tries a
    /// small probe write, so recovery — and a disk that filled while nothing changed — is seen.
    func checkWrites(quietInterval: Duration) async -> WriteFailure?

    /// Runs the store's writer until a graceful shutdown; writes queued by then are finished.
    func run() async throws

    /// Whether other processes write to the same data (several nodes on one database): work a
    /// process claimed is then given back only when its lease runs out, never at start-up.
    var isShared: Bool { get }

    /// What the store is, as `/healthz` says it: `sqlite` or `postgresql`.
    var kind: String { get }

    /// Where its data is: the SQLite file's path, or the database's address without its password.
    var location: String { get }

    /// What a failover of the database keeps of what was acknowledged, asked of the database
    /// now (a promoted standby, or a setting changed, shows at the next ask): `nil` for a
    /// store that has no standby (SQLite).
    func replication() async throws -> Replication?

    /// Changes run again since the store opened because another transaction held what they
    /// lock (several writers on one database): how often writers meet. Always 0 on SQLite,
    /// whose one writer meets nobody.
    var changesRunAgain: Int { get }

    /// Reads of events made since the store opened to bring other writers' events to this
    /// node's streams (those its own commits and the database's notifications did not bring),
    /// by why it read. None on SQLite.
    var eventReads: [String: Int] { get }
}

extension Store {
    public var changesRunAgain: Int { 0 }
    public var eventReads: [String: Int] { [:] }

    /// Runs `work` in a write transaction, about no activity known beforehand.
    public func write<T: Sendable>(now: Date, _ work: @escaping @Sendable (any Transaction) throws -> T) async throws -> Committed<T> {
        try await write(now: now, about: nil, work)
    }

    /// `write`, answering `completion` instead of a waiting task. A store whose writer is a
    /// thread answers from it (SQLite); this default runs `write` in a task.
    public func submit<T: Sendable>(
        now: Date, about activity: ActivityID?, _ work: @escaping @Sendable (any Transaction) throws -> T,
        completion: @escaping @Sendable (Result<Committed<T>, any Error>) -> Void
    ) {
        Task {
            do { completion(.success(try await write(now: now, about: activity, work))) } catch { completion(.failure(error)) }
        }
    }
}

/// A write's result once its transaction has committed.
public struct Committed<Value: Sendable>: Sendable {
    /// What the use case returned.
    public var value: Value
    /// The number of the commit that holds it, in `CommitLog` order.
    public var commit: UInt64

    /// Creates a result.
    public init(value: Value, commit: UInt64) {
        self.value = value
        self.commit = commit
    }
}

/// What a use case may read, in a transaction or on a reader. Another app's rows are not
/// hidden here: ownership is the engine's rule.
public protocol StoreReading: InstallationReading {
    // MARK: Apps and devices

    /// One app, if it exists.
    func app(_ bundleId: BundleID) throws -> App?
    /// Every app, by bundle identifier.
    func apps() throws -> [App]
    /// One device, if it exists.
    func device(_ id: DeviceID) throws -> Device?
    /// Every device, by identifier.
    func devices() throws -> [Device]
    /// Devices by identifier, from after `id` (the first without one), at most `limit`.
    func devices(after id: DeviceID?, limit: Int) throws -> [Device]
    /// A device's settings for an app as stored (the defaults when never changed), with the
    /// device's current push-to-start token for the app.
    func settings(deviceId: DeviceID, bundleId: BundleID) throws -> AppSettings
    /// Whether Live Activities are on for an app on a device (its settings' one field a start
    /// reads; on unless turned off).
    func activitiesEnabled(deviceId: DeviceID, bundleId: BundleID) throws -> Bool
    /// Who the API key with this hash speaks for.
    func keyOwner(hash: String) throws -> KeyOwner?

    // MARK: Activities

    /// One activity, if it exists.
    func activity(_ id: ActivityID) throws -> Activity?
    /// The activities a filter selects, in relevance order (score descending, earliest start
    /// first, then id), each with its place in that order: from after `filter.after`, at most
    /// `filter.limit + 1` — one more than a page, which says that another page follows.
    func activities(_ filter: ActivityFilter) throws -> [(activity: Activity, place: ActivityPlace)]
    /// The ids that start with `prefix` (of one app's activities, when given), in order, at most `limit`.
    func activityIDs(prefix: String, bundleId: BundleID?, limit: Int) throws -> [ActivityID]
    /// The newest live (pending, active or stale) activity an app started under `key`.
    func liveActivity(key: String, bundleId: BundleID) throws -> Activity?
    /// How many live activities are on a device, of one app and of all, in one read.
    func liveActivityCounts(deviceId: DeviceID, bundleId: BundleID) throws -> (app: Int, device: Int)
    /// An app's live activities started with a broadcast channel.
    func liveActivities(channelId: String, bundleId: BundleID) throws -> [Activity]
    /// An app's activities not yet dismissed, on one device or all, of one type or all.
    func shownActivities(bundleId: BundleID, deviceId: DeviceID?, attributesType: String?) throws -> [Activity]
    /// Every live activity that has a push token.
    func liveActivitiesWithPushTokens() throws -> [Activity]
    /// Activities whose next deadline is at or before `date`, earliest first, at most `limit`.
    func dueActivities(at date: Date, limit: Int) throws -> [Activity]
    /// The earliest deadline of any activity.
    func nextDeadline() throws -> Date?
    /// How many activities are in each state, of one app or of all.
    func activityCounts(bundleId: BundleID?) throws -> [ActivityState: Int]
    /// How many apps, devices and phones there are; for one app, the devices that hold its
    /// activities and the phones that hold its tokens.
    func population(bundleId: BundleID?) throws -> Population

    // MARK: Types, layouts, provider keys, channels, tokens

    /// A webhook endpoint, if it exists.
    func webhookEndpoint(_ id: String) throws -> WebhookEndpoint?
    /// An app's webhook endpoints (every app's with `nil`), oldest first.
    func webhookEndpoints(bundleId: BundleID?) throws -> [WebhookEndpoint]
    /// An endpoint's attempts, newest first: before the attempt `before`, at most `limit`;
    /// only the events given up on with `deadLettersOnly`.
    func webhookAttempts(endpointId: String, deadLettersOnly: Bool, before: Int64?, limit: Int) throws -> [WebhookAttempt]

    /// One of an app's users (docs/audiences.md).
    func appUser(bundleId: BundleID, externalId: String) throws -> AppUser?
    /// The app's users carrying every one of `tags` (all with none), after `after` in
    /// `externalId` order, at most `limit`.
    func appUsers(bundleId: BundleID, tags: [String: String], after: String?, limit: Int) throws -> [AppUser]

    /// One send (docs/audiences.md); locked in a write.
    func send(_ id: String) throws -> Send?
    /// An app's sends in the order they were made, after the send `after`, at most `limit`.
    func sends(bundleId: BundleID, after: String?, limit: Int) throws -> [Send]
    /// Sends due at `now`: scheduled for then or earlier, or running.
    func dueSends(at now: Date, limit: Int) throws -> [Send]
    /// When the next scheduled send is due, if one is.
    func nextScheduledSend() throws -> Date?
    /// A send's phones in order after `seq`, only those with `outcome` when given.
    func sendTargets(sendId: String, outcome: SendTargetOutcome?, after seq: Int64?, limit: Int) throws -> [SendTarget]
    /// Up to `limit` of a send's waiting phones; claimed in a write (another's are left out).
    func waitingSendTargets(sendId: String, limit: Int) throws -> [SendTarget]
    /// How many of a send's phones ended with each outcome.
    func sendOutcomeCounts(_ sendId: String) throws -> [SendTargetOutcome: Int]
    /// Whether any of a send's phones still waits.
    func sendHasWaitingTargets(_ sendId: String) throws -> Bool
    /// The phones of the app's users named, each once.
    func devicesOfUsers(bundleId: BundleID, externalIds: [String]) throws -> [DeviceID]
    /// Those of `ids` that are devices Islet knows.
    func knownDevices(_ ids: [DeviceID]) throws -> [DeviceID]
    /// The app's live activity with `key` on one phone; the key on that phone locked in a write.
    func liveActivity(key: String, bundleId: BundleID, deviceId: DeviceID) throws -> Activity?

    /// A caller's kept `Idempotency-Key`; locked in a write.
    func idempotencyRecord(scope: String, key: String) throws -> IdempotencyRecord?

    /// An app's activity type's registered shapes.
    func activityType(bundleId: BundleID, name: String) throws -> ActivityType?
    /// An app's registered activity types, by name.
    func activityTypes(bundleId: BundleID) throws -> [ActivityType]
    /// The layout of an app's activity type.
    func layout(bundleId: BundleID, attributesType: String) throws -> LayoutRecord?
    /// An app's layouts, by activity type.
    func layouts(bundleId: BundleID) throws -> [LayoutRecord]
    /// Provider keys, of one app or with one key id, or all.
    func providerKeys(bundleId: BundleID?, keyId: String?) throws -> [ProviderKey]
    /// One of an app's broadcast channels.
    func channel(_ id: String, bundleId: BundleID) throws -> BroadcastChannel?
    /// An app's broadcast channels, oldest first.
    func channels(bundleId: BundleID) throws -> [BroadcastChannel]
    /// The message a channel keeps for late joiners, with when it expires.
    func storedMessage(channelId: String) throws -> StoredMessage?
    /// What a push token belongs to.
    func token(_ token: String) throws -> TokenLookup
    /// A device's current push-to-start token for an app.
    func pushToStartToken(deviceId: DeviceID, bundleId: BundleID) throws -> String?
    /// Every device and app that hold a current push-to-start token.
    func pushToStartHolders() throws -> [PushToStartHolder]

    // MARK: Delivery to real phones

    /// An app's delivery credentials, with their keys.
    func deliveryCredentials(bundleId: BundleID) throws -> [StoredCredential]
    /// Every credential Apple refused (its `failure` set).
    func refusedCredentials() throws -> [DeliveryCredential]
    /// A phone's current push-to-start token for an app and activity type.
    func pushToStartToken(deviceId: DeviceID, bundleId: BundleID, attributesType: String) throws -> PhoneToken?
    /// An activity's current update token on its phone.
    func updateToken(activityId: ActivityID) throws -> PhoneToken?
    /// A phone token, current or retired.
    func phoneToken(_ token: String) throws -> PhoneToken?
    /// A device's phone tokens, newest first.
    func phoneTokens(deviceId: DeviceID) throws -> [PhoneToken]
    /// An activity delivered to a phone.
    func phoneActivity(_ id: ActivityID) throws -> PhoneActivity?
    /// An activity's phone as last committed, read without the activity's lock: what a
    /// sender's round reads. A round locks deliveries and never an activity, since a change
    /// locks its activity and then its deliveries: the other order would deadlock with it.
    func phoneActivityForSending(_ id: ActivityID) throws -> PhoneActivity?
    /// An activity's type, if the activity is there, read without its lock (as above).
    func attributesType(ofActivity id: ActivityID) throws -> String?
    /// When an app's priority-10 pushes went to a phone, oldest first (those of the last hour
    /// and perhaps older: the caller counts the hour).
    func phoneBudget(deviceId: DeviceID, bundleId: BundleID) throws -> [Date]
    /// One delivery.
    func delivery(_ id: Int64) throws -> Delivery?
    /// The unfinished deliveries (pending, being sent, held) of one order key, oldest first.
    func unfinishedDeliveries(in order: Delivery.Order) throws -> [Delivery]
    /// The deliveries whose turn and time have come: the oldest unfinished one of each order
    /// key, when pending and due at `date` or when its lease has run out; earliest due first.
    func dueDeliveries(at date: Date, limit: Int) throws -> [Delivery]
    /// An app's held deliveries.
    func heldDeliveries(bundleId: BundleID) throws -> [Delivery]
    /// Every delivery being sent.
    func claimedDeliveries() throws -> [Delivery]
    /// When the next pending delivery is due, or the next lease runs out.
    func nextDeliveryAttempt() throws -> Date?
    /// How many deliveries are unfinished, and when the oldest was written.
    func deliveryBacklog(bundleId: BundleID?) throws -> DeliveryBacklog

    // MARK: Android phones (docs/android.md)

    /// An app's FCM credential, with its service account.
    func fcmCredential(bundleId: BundleID) throws -> StoredFCMCredential?
    /// Every FCM credential FCM refused (its `failure` set).
    func refusedFCMCredentials() throws -> [FCMCredential]
    /// A real Android phone's current registration token for an app.
    func phoneFCMToken(deviceId: DeviceID, bundleId: BundleID) throws -> PhoneToken?
    /// The registration token and Firebase installation ID this server's Android phone holds
    /// for an app (the ID once the app opted in to it).
    func issuedFCMAddresses(deviceId: DeviceID, bundleId: BundleID) throws -> (token: String?, fid: String?)
    /// The service accounts this server issued, playing Google.
    func issuedAccounts() throws -> [IssuedAccount]
    /// An access token this server gave out, by its hash.
    func accessGrant(hash: String) throws -> AccessGrant?
    /// What an Android phone shows for an app's activity, by the sender's id for it.
    func androidNotification(deviceId: DeviceID, bundleId: BundleID, tag: String) throws -> AndroidNotificationRecord?
    /// What an Android phone shows, newest first.
    func androidNotifications(deviceId: DeviceID) throws -> [AndroidNotificationRecord]

    // MARK: Events

    /// Events after `id` that pass `filter`, oldest first, at most `limit`.
    func events(after id: EventID, filter: EventFilter, limit: Int) throws -> [EncodedEvent]
    /// An activity's events, oldest first.
    func history(of id: ActivityID) throws -> [EncodedEvent]
    /// The newest event's id, or 0.
    func lastEventID() throws -> EventID
}

/// What a use case may do inside one write transaction: read (seeing its own writes), save,
/// and append events. It lives on the store's writer and is used by one use case at a time.
public protocol Transaction: StoreReading, InstallationWriting, AnyObject {
    /// The time the change happens at.
    var now: Date { get }
    /// What the use case did besides its events, for metrics and caches; counted only if its
    /// savepoint holds.
    var effects: Effects { get set }

    /// Writes an activity; returns it in wire format, as written.
    @discardableResult func save(_ activity: Activity) throws -> String
    /// Appends an event at `now`. It is numbered after every committed event — by the time its
    /// transaction commits, which is when a store of several nodes gives ids out (docs/cluster.md)
    /// — so a use case never learns or relies on its id.
    func append(_ payload: EventPayload, bundleId: BundleID, deviceId: DeviceID, activityId: ActivityID?) throws

    /// Inserts an app (it must not exist).
    func insertApp(_ app: App) throws
    /// Writes an existing app's switches: strict pushes, delivery paused.
    func updateApp(_ app: App) throws
    /// Inserts a device (it must not exist).
    func insertDevice(_ device: Device) throws
    /// Writes a device's settings for an app (its token is not written: tokens have their own rows).
    func putSettings(_ settings: AppSettings) throws
    /// Makes the key with this hash the only key of `owner` (the admin, an app or a device).
    func replaceKeys(of owner: KeyOwner, hash: String) throws

    /// Writes a webhook endpoint, new or changed.
    func putWebhookEndpoint(_ endpoint: WebhookEndpoint) throws
    /// Removes a webhook endpoint and its attempts; returns whether there was one.
    func deleteWebhookEndpoint(_ id: String) throws -> Bool
    /// Appends to the webhook attempt log.
    func addWebhookAttempts(_ attempts: [WebhookAttempt]) throws

    /// Writes one of an app's users whole (its phones and tags replace the earlier).
    func putAppUser(_ user: AppUser) throws
    /// Forgets one of an app's users; returns whether there was one.
    func deleteAppUser(bundleId: BundleID, externalId: String) throws -> Bool

    /// Keeps an `Idempotency-Key`: held by a request's change, or answered.
    func putIdempotencyRecord(_ record: IdempotencyRecord) throws
    /// Forgets up to `limit` keys made before `date`; returns how many.
    func purgeIdempotencyRecords(before date: Date, limit: Int) throws -> Int

    /// Writes a send, new or changed.
    func putSend(_ send: Send) throws
    /// Adds phones to a send after its last, each once; returns how many were new.
    func addSendTargets(sendId: String, devices: [DeviceID]) throws -> Int
    /// Writes what a send did on one of its phones.
    func finishSendTarget(_ target: SendTarget) throws

    /// Writes a layout record, replacing any earlier revision.
    func putLayout(_ record: LayoutRecord) throws
    /// Removes a layout; returns whether there was one.
    func deleteLayout(bundleId: BundleID, attributesType: String) throws -> Bool
    /// Writes an activity type's shapes, replacing any earlier ones.
    func putActivityType(_ type: ActivityType) throws
    /// Writes a provider key, replacing one with the same key id for the app.
    func putProviderKey(_ key: ProviderKey) throws
    /// Removes a provider key; returns whether there was one.
    func deleteProviderKey(keyId: String, bundleId: BundleID) throws -> Bool
    /// Inserts a broadcast channel.
    func insertChannel(_ channel: BroadcastChannel) throws
    /// Removes a channel; returns whether there was one.
    func deleteChannel(_ id: String, bundleId: BundleID) throws -> Bool
    /// Keeps a channel's most recent message for late joiners until `expires`.
    func storeMessage(_ change: Activity.PushedChange, channelId: String, expires: Date) throws

    /// Records a token as current for its holder.
    func addToken(_ token: String, holder: TokenHolder) throws
    /// Retires every current token of a holder: pushes to them answer 410 from then on.
    func retireTokens(of holder: TokenHolder, reason: TokenRetirement) throws

    /// Deletes what is older than `date`: dismissed activities (with what was delivered to a
    /// phone for them), events (the delivery log's lines among them), retired tokens, and
    /// finished deliveries; at most `limit` rows of each kind, oldest first, so that a purge is
    /// many short transactions rather than one that holds the writer.
    func purge(before date: Date, limit: Int) throws -> PurgeCount

    // MARK: Delivery to real phones

    /// Writes one of an app's keys for an environment, replacing the one with its key id.
    func putCredential(_ stored: StoredCredential) throws
    /// Removes an app's keys (of one environment, or all; one key id, or all); returns how many.
    func deleteCredentials(bundleId: BundleID, environment: APNsEnvironment?, keyId: String?) throws -> Int
    /// Marks a credential refused by Apple (or, with `nil`, no longer).
    func setCredentialFailure(bundleId: BundleID, environment: APNsEnvironment, keyId: String, failure: String?) throws
    /// Records a phone token as current (one already recorded is replaced).
    func putPhoneToken(_ token: PhoneToken) throws
    /// Retires the current tokens of a holder, for `reason`.
    func retirePhoneTokens(_ holder: PhoneTokenHolder, reason: String) throws
    /// Retires one token, with the time Apple says it stopped being valid.
    func retirePhoneToken(_ token: String, reason: String, appleTimestamp: Date?) throws
    /// Records Apple's last answer for a token.
    func recordTokenResult(_ token: String, at date: Date, status: Int, reason: String?) throws
    /// Writes an activity's delivery state on its phone.
    func putPhoneActivity(_ phone: PhoneActivity) throws
    /// `phoneBudget`, under the budget's lock until the transaction ends: what is read, then
    /// written, is not changed meanwhile by another writer (another lane, another node).
    func lockedPhoneBudget(deviceId: DeviceID, bundleId: BundleID) throws -> [Date]
    /// Writes when an app's priority-10 pushes went to a phone (`phoneBudget`); read it with
    /// `lockedPhoneBudget` first.
    func putPhoneBudget(deviceId: DeviceID, bundleId: BundleID, sends: [Date]) throws
    /// Writes a new delivery; returns its number.
    func insertDelivery(_ delivery: Delivery) throws -> Int64
    /// Writes a delivery's state, attempts, times and lease.
    func updateDelivery(_ delivery: Delivery) throws

    // MARK: Android phones

    /// Writes an app's FCM credential, replacing the one it had.
    func putFCMCredential(_ stored: StoredFCMCredential) throws
    /// Removes an app's FCM credential; returns whether there was one.
    func deleteFCMCredential(bundleId: BundleID) throws -> Bool
    /// Marks an app's FCM credential refused (or, with `nil`, no longer).
    func setFCMCredentialFailure(bundleId: BundleID, failure: String?) throws
    /// Keeps a service account this server issued.
    func insertIssuedAccount(_ account: IssuedAccount) throws
    /// Keeps an access token this server gave out.
    func insertAccessGrant(_ grant: AccessGrant) throws
    /// Writes what an Android phone shows for an activity.
    func putAndroidNotification(_ record: AndroidNotificationRecord) throws
}

/// Whose phone tokens: a phone's push-to-start token for an app and type, or an activity's.
public enum PhoneTokenHolder: Hashable, Sendable {
    case pushToStart(deviceId: DeviceID, bundleId: BundleID, attributesType: String)
    case update(activityId: ActivityID)
    /// An Android phone's registration token for an app.
    case fcm(deviceId: DeviceID, bundleId: BundleID)
}

/// How many deliveries are unfinished, when the oldest was written, and how many of them wait
/// to be tried again (Apple did not answer, or answered 429, 500 or 503).
public struct DeliveryBacklog: Hashable, Sendable {
    public var depth: Int
    public var oldest: Date?
    public var retrying: Int
    public var held: Int

    public init(depth: Int, oldest: Date?, retrying: Int = 0, held: Int = 0) {
        self.depth = depth
        self.oldest = oldest
        self.retrying = retrying
        self.held = held
    }
}

/// A channel's kept message and when it stops being handed to late joiners.
public struct StoredMessage: Sendable, Hashable {
    /// The update or end the broadcast carried.
    public var change: Activity.PushedChange
    /// When it expires.
    public var expires: Date

    /// Creates a stored message.
    public init(change: Activity.PushedChange, expires: Date) {
        self.change = change
        self.expires = expires
    }
}

/// Who holds a push token.
public enum TokenHolder: Hashable, Sendable {
    /// An activity's update token.
    case activity(ActivityID, deviceId: DeviceID, bundleId: BundleID)
    /// A device's push-to-start token for an app.
    case pushToStart(deviceId: DeviceID, bundleId: BundleID)
    /// An Android phone's FCM registration token for an app.
    case fcm(deviceId: DeviceID, bundleId: BundleID)
    /// An Android phone's Firebase installation ID for an app.
    case fid(deviceId: DeviceID, bundleId: BundleID)
}

/// Why a token stopped being current: `rotated` answers 410 `ExpiredToken`, the others 410
/// `Unregistered`.
public struct TokenRetirement: Hashable, Sendable {
    /// The reason's name, as stored.
    public var reason: String
    /// When it was retired: the time Apple's 410 names.
    public var at: Date

    /// Creates a retirement.
    public init(reason: String, at: Date) {
        self.reason = reason
        self.at = at
    }

    /// Replaced by a newer token.
    public static func rotated(at date: Date) -> TokenRetirement { TokenRetirement(reason: "rotated", at: date) }
    /// Its activity was dismissed.
    public static func activityDismissed(at date: Date) -> TokenRetirement {
        TokenRetirement(reason: "activityDismissed", at: date)
    }
}

/// A device and app that hold a current push-to-start token.
public struct PushToStartHolder: Hashable, Sendable {
    public var deviceId: DeviceID
    public var bundleId: BundleID

    public init(deviceId: DeviceID, bundleId: BundleID) {
        self.deviceId = deviceId
        self.bundleId = bundleId
    }
}

/// What a push token belongs to, as a push finds it.
public enum TokenLookup: Hashable, Sendable {
    /// An activity's current update token.
    case activity(ActivityID, bundleId: BundleID)
    /// A device's current push-to-start token for an app.
    case pushToStart(DeviceID, bundleId: BundleID)
    /// An Android phone's current FCM registration token for an app.
    case fcm(DeviceID, bundleId: BundleID)
    /// An Android phone's current Firebase installation ID for an app.
    case fid(DeviceID, bundleId: BundleID)
    /// A token that was valid until `at`: rotated, or its activity dismissed.
    case retired(at: Date, reason: String, bundleId: BundleID)
    /// A token this server never issued (or one purged long ago).
    case unknown
}

/// Who an API key speaks for.
public enum KeyOwner: Hashable, Sendable {
    /// The server's administrator: manages apps and devices, and may act for any app.
    case admin
    /// One app: sees and changes only its own activities.
    case app(BundleID)
    /// One device's display: reads what the device shows, dismisses its activities and changes
    /// its settings; it starts, updates and ends nothing.
    case device(DeviceID)
    /// An app's publishable key (`pk_…`, docs/installations.md): registers installations of
    /// that app, and nothing else. Its id names it in the API.
    case client(id: String, bundleId: BundleID)
    /// An installation's credential: reports that installation's own tokens and its activities'
    /// states; its id is its device's.
    case installation(id: String, bundleId: BundleID)
}

/// What a retention pass deleted.
public struct PurgeCount: Hashable, Sendable {
    public var activities: Int
    public var events: Int
    /// Retired push tokens, and phone tokens retired or of activities deleted.
    public var tokens: Int
    /// Finished deliveries, and those of activities deleted.
    public var deliveries: Int
    /// Webhook attempts (docs/webhooks.md): the attempt log, dead letters included.
    public var webhookAttempts: Int

    public init(activities: Int = 0, events: Int = 0, tokens: Int = 0, deliveries: Int = 0, webhookAttempts: Int = 0) {
        self.activities = activities
        self.events = events
        self.tokens = tokens
        self.deliveries = deliveries
        self.webhookAttempts = webhookAttempts
    }

    /// Whether anything was deleted.
    public var isEmpty: Bool { largest == 0 }

    /// The most rows of one kind: a batch that deleted fewer than its limit of each was the last.
    public var largest: Int { max(activities, events, tokens, deliveries, webhookAttempts) }

    /// Both counts added.
    public static func + (a: PurgeCount, b: PurgeCount) -> PurgeCount {
        PurgeCount(
            activities: a.activities + b.activities, events: a.events + b.events, tokens: a.tokens + b.tokens, deliveries: a.deliveries + b.deliveries,
            webhookAttempts: a.webhookAttempts + b.webhookAttempts
        )
    }
}

/// Writes to the store are failing, since a time, for a reason.
public struct WriteFailure: Hashable, Sendable {
    /// When the first failing write happened.
    public var since: Date
    /// Why, as the storage says it.
    public var message: String

    public init(since: Date, message: String) {
        self.since = since
        self.message = message
    }
}

/// How hard a commit waits for the disk.
public enum Durability: String, Sendable, CaseIterable {
    /// Every commit reaches the disk before it returns: nothing acknowledged is lost even on
    /// power loss (SQLite `synchronous=FULL`).
    case full
    /// Commits survive a crash of the process but not of the machine (`synchronous=NORMAL`).
    case normal
}

/// Where and how a store keeps its data: what a store is opened with.
public struct StoreOptions: Sendable {
    /// The database: a file path for SQLite, a `postgres://` address for PostgreSQL.
    public var location: String
    /// How hard commits wait for the disk.
    public var durability: Durability
    /// Told when writes start failing for the storage's sake (with the failure) and when they
    /// succeed again (`nil`).
    public var onWriteHealth: @Sendable (WriteFailure?) -> Void
    /// How long a change waits for the database to confirm its commit before it is answered
    /// `unavailable` (PostgreSQL: a synchronous standby that is not there holds every commit).
    public var commitTimeout: Duration

    public init(
        location: String, durability: Durability = .full, commitTimeout: Duration = .seconds(10),
        onWriteHealth: @escaping @Sendable (WriteFailure?) -> Void = { _ in }
    ) {
        self.location = location
        self.durability = durability
        self.commitTimeout = commitTimeout
        self.onWriteHealth = onWriteHealth
    }
}

/// Opens a store: what the composition root (the `islet` command, a test) hands the server, so
/// the server itself never names a store type.
public typealias StoreOpener = @Sendable (StoreOptions) async throws -> any Store

extension Store {
    /// No standby to fail over to: SQLite's file is the node's own.
    public func replication() async throws -> Replication? { nil }
}
