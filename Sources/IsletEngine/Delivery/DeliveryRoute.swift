import Foundation
import IsletCore

/// The claim side of a delivery's state machine, as `Delivery.handle` is its answer side: what a
/// delivery needs, read once in the claim's transaction (`DeliveryContext.load`), and where it
/// goes — sent, held, or given up — decided from that alone (`route`), with typed reasons.
/// No store is read and nothing is written here: the claim performs the route.
struct DeliveryContext: Sendable {
    /// Where a delivery would go, with what each kind of destination is decided by.
    enum Destination: Sendable {
        /// The activity is no longer delivered to a phone.
        case noPhone
        case iPhone(IPhone)
        case android(Android)
        /// A broadcast: its channel, `nil` once deleted.
        case broadcast(Broadcast?)
    }

    /// An app's side of sending: paused or not, and its credentials.
    struct App: Sendable {
        var bundleId: BundleID
        var paused: Bool
        /// Its APNs credentials, one per environment at most.
        var credentials: [StoredCredential]
        /// Its FCM service account.
        var fcmCredential: StoredFCMCredential?
    }

    /// An activity on an iPhone.
    struct IPhone: Sendable {
        var phone: PhoneActivity
        /// A start's: the activity's type, and the phone's push-to-start token for it.
        var attributesType: String?
        /// A start's push-to-start token, or the activity's update token otherwise.
        var token: PhoneToken?
        /// A renewed activity's end goes in its successor's order: the successor, and whether
        /// the phone shows it yet (it sent the successor's update token).
        var successor: (id: ActivityID, shown: Bool)?
        var app: App
        /// The app's priority-10 pushes to the phone this hour: those Apple took, those out and
        /// those this round already planned.
        var spent: Int
        /// Its hourly budget.
        var budget: Int
    }

    /// An activity on an Android phone.
    struct Android: Sendable {
        var phone: PhoneActivity
        /// The phone's registration token for the app.
        var token: PhoneToken?
        var app: App
    }

    /// A broadcast's channel.
    struct Broadcast: Sendable {
        var channel: BroadcastChannel
        var app: App
    }

    var delivery: Delivery
    var now: Date
    var destination: Destination
}

/// Where a claimed delivery goes.
enum DeliveryRoute: Sendable {
    /// Sent now: the request, its priority and why, where it goes as the answer side tells targets apart.
    case send(Outbound, priority: DeliveryPriority, environment: APNsEnvironment, target: Delivery.Attempt.Target)
    /// Held until someone else brings what it waits for.
    case hold(DeliveryHold)
    /// Given up.
    case fail(DeliveryFailure)
}

/// Why a delivery waits for someone else.
enum DeliveryHold: Error, Hashable, Sendable {
    /// A renewed activity's end waits until the phone shows its successor.
    case successorNotShown(ActivityID)
    /// The app has not sent the activity's update token yet.
    case noUpdateToken(ActivityID)
    case paused(BundleID)
    case noCredentials(BundleID, APNsEnvironment)
    /// Apple refused the credential (the failure as recorded).
    case credentialRefused(BundleID, String)
    case noRegistrationToken(BundleID, DeviceID)
    case noFCMCredential(BundleID)
    /// Google refused the service account (the failure as recorded).
    case fcmCredentialRefused(BundleID, String)

    /// As the delivery log says it.
    var note: String {
        switch self {
        case .successorNotShown(let successor):
            "renewed: this card leaves once the phone shows its successor \(successor) (its update token comes when it does)"
        case .noUpdateToken(let activity):
            "no update token yet: the app sends it with PUT /v1/activities/\(activity)/push-token"
        case .paused(let app):
            "delivery is paused for \(app): resume it with PATCH /v1/apps/\(app) {\"deliveryPaused\": false}"
        case .noCredentials(let app, let environment):
            "no credentials for \(environment.rawValue): PUT /v1/apps/\(app)/delivery"
        case .credentialRefused(let app, let failure):
            "the credential cannot be used — \(failure): register it again with PUT /v1/apps/\(app)/delivery"
        case .noRegistrationToken(_, let device):
            "no registration token: the app sends one with PUT /v1/devices/\(device)/fcm-token"
        case .noFCMCredential(let app):
            "no FCM credential: PUT /v1/apps/\(app)/fcm"
        case .fcmCredentialRefused(let app, let failure):
            "the FCM credential cannot be used — \(failure): register it again with PUT /v1/apps/\(app)/fcm"
        }
    }
}

/// Why a delivery is given up before it is sent.
enum DeliveryFailure: Hashable, Sendable {
    /// Past its `apns-expiration`.
    case expired
    /// Its activity is no longer delivered to a phone.
    case noPhone
    /// The phone's push-to-start token for the type is gone.
    case noPushToStartToken(attributesType: String)
    /// Apple (or FCM) retired the token the phone's activity went to.
    case tokenRetired(DevicePlatform)
    case channelDeleted(String)

    /// As the delivery log says it.
    var note: String {
        switch self {
        case .expired: "expired before it could be delivered: a Live Activity lives eight hours at most"
        case .noPhone: "the activity is no longer delivered to a phone"
        case .noPushToStartToken(let type): "the phone has no push-to-start token for \(type) any more"
        case .tokenRetired(.android): "FCM retired this phone's registration token"
        case .tokenRetired: "Apple retired this activity's token on the phone"
        case .channelDeleted(let id): "channel \(id) was deleted"
        }
    }
}

/// A request's priority and why: against the app's budget of priority-10 requests an hour on the
/// phone, starts and ends 10; an alert 10 while the budget lasts; any other update 10 while more
/// than a quarter of it is left (the rest is kept for alerts), 5 beyond; a broadcast 10; FCM high.
enum DeliveryPriority: Hashable, Sendable {
    case start
    case end(left: Int, budget: Int)
    case alert(left: Int, budget: Int)
    case alertPastBudget(budget: Int)
    case withinBudget(left: Int, budget: Int)
    case keptForAlerts(left: Int, budget: Int)
    case budgetSpent(budget: Int)
    case broadcast
    case fcm

    /// The priority of an activity's change, with `spent` of `budget` gone this hour.
    init(event: Delivery.Event, alert: Bool, spent: Int, budget: Int) {
        let left = max(0, budget - spent)
        switch event {
        case .start: self = .start
        case .end: self = .end(left: left, budget: budget)
        case .update where alert: self = left > 0 ? .alert(left: left, budget: budget) : .alertPastBudget(budget: budget)
        case .update:
            let kept = (budget + 3) / 4
            self = left > kept ? .withinBudget(left: left, budget: budget) : left > 0 ? .keptForAlerts(left: left, budget: budget) : .budgetSpent(budget: budget)
        }
    }

    /// `apns-priority` (FCM's `HIGH` is written 10).
    var value: Int {
        switch self {
        case .alertPastBudget, .keptForAlerts, .budgetSpent: 5
        case .start, .end, .alert, .withinBudget, .broadcast, .fcm: 10
        }
    }

    /// The app's hourly budget on the phone, when the request is counted against it.
    var budget: Int? {
        switch self {
        case .end(_, let budget), .alert(_, let budget), .alertPastBudget(let budget), .withinBudget(_, let budget),
            .keptForAlerts(_, let budget), .budgetSpent(let budget):
            budget
        case .start, .broadcast, .fcm: nil
        }
    }

    /// As the delivery log says it.
    var reason: String {
        switch self {
        case .start: "a start (push-to-start has its own budget on the phone)"
        case .end(let left, let budget): "an end: a phone always lets an activity end, and it spends no budget; \(left) of \(budget) left this hour"
        case .alert(let left, let budget): "an alert; \(left) of \(budget) left this hour"
        case .alertPastBudget(let budget): "an alert, after a budget of \(budget) an hour was spent"
        case .withinBudget(let left, let budget): "within the budget; \(left) of \(budget) left this hour"
        case .keptForAlerts(let left, let budget): "the last \(left) of \(budget) this hour are kept for alerts"
        case .budgetSpent(let budget): "a budget of \(budget) an hour spent"
        case .broadcast: "a broadcast: 10, it spends no activity's budget"
        case .fcm: "FCM priority HIGH: Android has no Live Activity budget"
        }
    }
}

extension DeliveryContext {
    /// Where the delivery goes, from its context alone.
    func route() -> DeliveryRoute {
        if delivery.hasExpired(at: now) { return .fail(.expired) }
        switch destination {
        case .noPhone: return .fail(.noPhone)
        case .iPhone(let iPhone): return route(iPhone)
        case .android(let android): return route(android)
        case .broadcast(let broadcast): return route(broadcast)
        }
    }

    private func route(_ iPhone: IPhone) -> DeliveryRoute {
        let token: PhoneToken
        if delivery.event == .start {
            guard let found = iPhone.token else { return .fail(.noPushToStartToken(attributesType: iPhone.attributesType ?? "")) }
            token = found
        } else {
            guard iPhone.phone.state == .active else { return .fail(.tokenRetired(.ios)) }
            if let successor = iPhone.successor, !successor.shown { return .hold(.successorNotShown(successor.id)) }
            guard let found = iPhone.token else { return .hold(.noUpdateToken(iPhone.phone.activityId)) }
            token = found
        }
        let credential: StoredCredential
        switch iPhone.app.credential(for: token.environment) {
        case .success(let found): credential = found
        case .failure(let hold): return .hold(hold)
        }
        let priority = DeliveryPriority(event: delivery.event, alert: delivery.alert, spent: iPhone.spent, budget: iPhone.budget)
        let request = OutboundRequest(
            credential: credential, target: .device(token: token.token), bundleId: iPhone.phone.bundleId, payload: delivery.payload,
            priority: priority.value, expiration: delivery.expiration, apnsId: delivery.apnsId,
            collapseId: token.kind == .pushToStart ? iPhone.phone.activityId : nil
        )
        let target: Delivery.Attempt.Target = token.kind == .update ? .updateToken(token.token) : .pushToStartToken(token.token)
        return .send(.apns(request), priority: priority, environment: token.environment, target: target)
    }

    /// To an Android phone's registration token for the app, with the app's service account, as
    /// a high-priority FCM message (docs/android.md).
    private func route(_ android: Android) -> DeliveryRoute {
        guard android.phone.state == .active else { return .fail(.tokenRetired(.android)) }
        let app = android.app
        guard let token = android.token else { return .hold(.noRegistrationToken(app.bundleId, android.phone.deviceId)) }
        if app.paused { return .hold(.paused(app.bundleId)) }
        guard let credential = app.fcmCredential else { return .hold(.noFCMCredential(app.bundleId)) }
        if let failure = credential.credential.failure { return .hold(.fcmCredentialRefused(app.bundleId, failure)) }
        let ttl = delivery.expiration.map { $0.timeIntervalSince(now) } ?? Deliveries.lifetime
        let address = FCMAddress(token) ?? .token(token.token)
        let request = FCMRequest(credential: credential, address: address, islet: delivery.payload, activityId: android.phone.activityId, ttl: ttl)
        let target: Delivery.Attempt.Target = switch address {
        case .token(let token): .registrationToken(token)
        case .fid(let fid): .installationId(fid)
        }
        return .send(.fcm(request), priority: .fcm, environment: .production, target: target)
    }

    /// To the channel, with the credential of the environment it was made in, at priority 10: a
    /// broadcast spends no activity's budget.
    private func route(_ broadcast: Broadcast?) -> DeliveryRoute {
        guard let broadcast, let environment = broadcast.channel.environment else {
            return .fail(.channelDeleted(delivery.channelId ?? ""))
        }
        let credential: StoredCredential
        switch broadcast.app.credential(for: environment) {
        case .success(let found): credential = found
        case .failure(let hold): return .hold(hold)
        }
        let channel = broadcast.channel
        // A channel that stores nothing takes only apns-expiration 0 (deliver now, store nothing).
        let expiration = channel.storagePolicy == 0 ? Date(timeIntervalSince1970: 0) : delivery.expiration
        let request = OutboundRequest(
            credential: credential, target: .channel(channel.id), bundleId: delivery.bundleId, payload: delivery.payload, priority: 10,
            expiration: expiration, apnsId: delivery.apnsId
        )
        return .send(.apns(request), priority: .broadcast, environment: environment, target: .channel(channel.id))
    }
}

extension DeliveryContext.App {
    /// The app's credential for an environment, unless delivery is paused, there is none, or
    /// Apple refused it.
    func credential(for environment: APNsEnvironment) -> Result<StoredCredential, DeliveryHold> {
        if paused { return .failure(.paused(bundleId)) }
        let keys = credentials.keys(in: environment)
        guard let newest = keys.last else { return .failure(.noCredentials(bundleId, environment)) }
        guard let signer = credentials.signer(in: environment) else {
            return .failure(.credentialRefused(bundleId, newest.credential.failure ?? "refused"))
        }
        return .success(signer)
    }
}

extension DeliveryContext {
    /// Reads what the delivery's route depends on, once: its phone, its token, its app's pause
    /// and credentials (from `apps`, read once a round), and — for an iPhone — the phone's
    /// budget, counting `planned` (the priority-10 requests out and planned this round for each
    /// phone and app).
    static func load(
        _ delivery: Delivery, rules: LifecycleRules, planned: [PhoneBudget.Key: Int], apps: inout Apps, in tx: any Transaction
    ) throws -> DeliveryContext {
        DeliveryContext(
            delivery: delivery, now: tx.now, destination: try destination(of: delivery, rules: rules, planned: planned, apps: &apps, in: tx)
        )
    }

    private static func destination(
        of delivery: Delivery, rules: LifecycleRules, planned: [PhoneBudget.Key: Int], apps: inout Apps, in tx: any Transaction
    ) throws -> Destination {
        if let channelId = delivery.channelId, delivery.activityId == nil {
            guard let channel = try tx.channel(channelId, bundleId: delivery.bundleId) else { return .broadcast(nil) }
            return .broadcast(Broadcast(channel: channel, app: try apps.app(delivery.bundleId, fcm: false, in: tx)))
        }
        // Read without the activity's lock, as everything a round reads (`phoneActivityForSending`).
        guard let activityId = delivery.activityId, let phone = try tx.phoneActivityForSending(activityId) else { return .noPhone }
        if phone.platform == .android {
            let token = try tx.phoneFCMToken(deviceId: phone.deviceId, bundleId: phone.bundleId)
            return .android(Android(phone: phone, token: token, app: try apps.app(phone.bundleId, fcm: true, in: tx)))
        }
        var iPhone = IPhone(phone: phone, app: try apps.app(phone.bundleId, fcm: false, in: tx), spent: 0, budget: 0)
        switch (delivery.event, delivery.order) {
        case (.start, _):
            guard let type = try tx.attributesType(ofActivity: activityId) else { return .noPhone }
            iPhone.attributesType = type
            iPhone.token = try tx.pushToStartToken(deviceId: phone.deviceId, bundleId: phone.bundleId, attributesType: type)
        case (.end, .activity(let successor)) where successor != activityId:
            iPhone.successor = (successor, try tx.updateToken(activityId: successor) != nil)
            iPhone.token = try tx.updateToken(activityId: activityId)
        default:
            iPhone.token = try tx.updateToken(activityId: activityId)
        }
        let key = PhoneBudget.Key(deviceId: phone.deviceId, bundleId: phone.bundleId)
        let (spent, budget) = try apps.standing(key, rules: rules, in: tx)
        iPhone.spent = spent + (planned[key] ?? 0)
        iPhone.budget = budget
        return .iPhone(iPhone)
    }

    /// The apps a claim's deliveries go for, each read once in the claim's transaction (which
    /// changes no app): a round of many deliveries of one app reads its row and credentials once,
    /// and of many activities on one phone the phone's budget once (the round's own plans are
    /// `planned`, beside it).
    struct Apps {
        private struct Key: Hashable {
            var bundleId: BundleID
            var fcm: Bool
        }

        private var read: [Key: App] = [:]
        private var budgets: [PhoneBudget.Key: (spent: Int, budget: Int)] = [:]

        /// The app's priority-10 pushes Apple took on the phone in the last hour, and its hourly budget.
        mutating func standing(_ key: PhoneBudget.Key, rules: LifecycleRules, in tx: any Transaction) throws -> (spent: Int, budget: Int) {
            if let known = budgets[key] { return known }
            let (sends, budget) = try PhoneBudget.standing(deviceId: key.deviceId, bundleId: key.bundleId, rules: rules, now: tx.now, in: tx)
            budgets[key] = (sends.count, budget)
            return (sends.count, budget)
        }

        init() {}

        /// The app's side of sending; for FCM, its service account, else its APNs credentials.
        mutating func app(_ bundleId: BundleID, fcm: Bool, in tx: any Transaction) throws -> App {
            let key = Key(bundleId: bundleId, fcm: fcm)
            if let known = read[key] { return known }
            let app = App(
                bundleId: bundleId, paused: try tx.app(bundleId)?.deliveryPaused == true,
                credentials: fcm ? [] : try tx.deliveryCredentials(bundleId: bundleId),
                fcmCredential: fcm ? try tx.fcmCredential(bundleId: bundleId) : nil
            )
            read[key] = app
            return app
        }
    }
}
