import Foundation
import IsletCore

/// A delivery a sender took: the request to make, and what to write down about it.
struct ClaimedDelivery: Sendable {
    var delivery: Delivery
    var request: Outbound
    var priorityReason: String
    /// The app's hourly budget of priority-10 pushes on the phone, for a request that spends it.
    var budgetPerHour: Int?
    var environment: APNsEnvironment
    /// Where the request goes, as the state machine tells targets apart.
    var attemptTarget: Delivery.Attempt.Target

    /// The attempt, as `Delivery.handle` reads it.
    func attempt(providerTokenRefreshed: Bool) -> Delivery.Attempt {
        Delivery.Attempt(
            number: delivery.attempts, target: attemptTarget, priority: priority, environment: environment,
            providerTokenRefreshed: providerTokenRefreshed
        )
    }

    /// `apns-priority`; a message to FCM goes at `HIGH`, written 10.
    var priority: Int {
        switch request {
        case .apns(let request): request.priority
        case .fcm: 10
        }
    }

    /// The phone budget it spends once Apple accepts it (a priority-10 request to an activity's
    /// update token), if it spends one.
    var budget: PhoneBudget.Key? {
        guard priority == 10, attemptTarget.spendsBudget, delivery.activityId != nil, let deviceId = delivery.deviceId else { return nil }
        return PhoneBudget.Key(deviceId: deviceId, bundleId: delivery.bundleId)
    }

    /// Whether the request went to FCM (no `apns-id`: FCM names its messages in its answer).
    var isFCM: Bool {
        if case .fcm = request { return true }
        return false
    }

    /// The phone token the request went to, if it went to one.
    var phoneToken: String? {
        switch request {
        case .apns(let request):
            if case .device(let token) = request.target { return token }
            return nil
        case .fcm(let request): return request.address.value
        }
    }
}

/// What a sender's round did (`Engine.settleDeliveries`).
struct SettledRound: Sendable {
    /// The deliveries it claimed, to send.
    var claimed: [ClaimedDelivery]
    /// When it claimed less than it had room for: when the next delivery waiting is due, if any.
    var nextAttempt: Date?
}

/// A claimed delivery and what came back for it, waiting to be written down.
struct AnsweredDelivery: Sendable {
    var claimed: ClaimedDelivery
    var answer: TransportAnswer
}

extension Engine {
    /// Takes up to `limit` deliveries whose turn and time have come, oldest first, one per
    /// activity: resolves the token, the credential and the priority of each, and holds it for
    /// `lease` seconds. One that cannot go yet (no update token, no credential) is held, and says why.
    func claimDeliveries(limit: Int, lease: TimeInterval) async throws -> [ClaimedDelivery] {
        try await settle([], claim: limit, lease: lease, maximumBackoff: 0, round: false).claimed
    }

    /// A sender's round: writes down the answers that came back and claims up to `limit` more
    /// deliveries, in one transaction, so that under load each round is one transaction for
    /// many deliveries. The answers go first, so a delivery they finish lets the next of its
    /// activity be claimed in the same round; and the round wakes no sender for it — its own
    /// sender either claimed it or comes back when an answer frees a place.
    ///
    /// - Returns: What it claimed; and, when it claimed less than `limit` (nothing else is due
    ///   now), when the next delivery will be, if one is waiting.
    /// - Throws: The store's error; none of the answers is then written (`recordDelivery` writes
    ///   them one by one).
    func settleDeliveries(
        _ answered: [AnsweredDelivery], claim limit: Int, lease: TimeInterval, maximumBackoff: TimeInterval
    ) async throws -> SettledRound {
        try await settle(answered, claim: limit, lease: lease, maximumBackoff: maximumBackoff, round: true)
    }

    private func settle(
        _ answered: [AnsweredDelivery], claim limit: Int, lease: TimeInterval, maximumBackoff: TimeInterval, round: Bool
    ) async throws -> SettledRound {
        let (rules, pacing) = (self.rules, fcmPacing)
        let jitters = answered.map { _ in Double.random(in: 0...1) }
        // The answers written here spend the budget in the store; what is still out spends it on
        // the phone already, so the claims count it too.
        inFlightBudget.remove(answered.compactMap(\.claimed.budget))
        let inFlight = inFlightBudget.counts
        let settled = try await write { tx in
            if round { tx.effects.deliveryRounds += 1 }
            var spends = PhoneBudget.Spends()
            for (answered, jitter) in zip(answered, jitters) {
                try Self.record(answered, maximumBackoff: maximumBackoff, jitter: jitter, spends: &spends, in: tx)
            }
            // Before the claim, which reads what they spent.
            try spends.write(in: tx)
            let claimed = limit > 0 ? try Self.claim(limit: limit, lease: lease, rules: rules, pacing: pacing, inFlight: inFlight, in: tx) : []
            guard round else { return SettledRound(claimed: claimed) }
            tx.effects.deliveriesReady = false
            return SettledRound(claimed: claimed, nextAttempt: limit > 0 && claimed.count < limit ? try tx.nextDeliveryAttempt() : nil)
        }
        inFlightBudget.add(settled.claimed.compactMap(\.budget))
        return settled
    }

    /// Claims due deliveries in a transaction (`claimDeliveries`).
    ///
    /// - Parameter inFlight: Priority-10 requests this node has out, per phone and app: Apple
    ///   has not answered them, so the store's budget does not count them yet.
    private static func claim(
        limit: Int, lease: TimeInterval, rules: LifecycleRules, pacing: DeviceQuotas, inFlight: [PhoneBudget.Key: Int],
        in tx: any Transaction
    ) throws -> [ClaimedDelivery] {
        var claimed: [ClaimedDelivery] = []
        // Those out, and those this round plans at 10: several activities of one app on one
        // phone never go at 10 on one unit left.
        var planned = inFlight
        var apps = DeliveryContext.Apps()
        for var delivery in try tx.dueDeliveries(at: tx.now, limit: limit) {
            switch try DeliveryContext.load(delivery, rules: rules, planned: planned, apps: &apps, in: tx).route() {
            case .hold(let why):
                delivery.hold()
                try tx.updateDelivery(delivery)
                try log(DeliveryReport(delivery: delivery.id, event: delivery.event.rawValue, outcome: .held, note: why.note), of: delivery, in: tx)
            case .fail(let why):
                try finish(&delivery, as: .failed, report: DeliveryReport(
                    delivery: delivery.id, event: delivery.event.rawValue, outcome: .failed, attempt: why == .expired ? delivery.attempts : 0,
                    note: why.note
                ), in: tx)
            case .send(let request, let priority, let environment, let target):
                if case .fcm(let message) = request, let wait = pacing.take(message.address.value, at: tx.now) {
                    try pace(&delivery, wait: wait, in: tx)
                    continue
                }
                delivery.claim(at: tx.now, lease: lease)
                try tx.updateDelivery(delivery)
                let taken = ClaimedDelivery(
                    delivery: delivery, request: request, priorityReason: priority.reason, budgetPerHour: priority.budget,
                    environment: environment, attemptTarget: target
                )
                if let key = taken.budget { planned[key, default: 0] += 1 }
                claimed.append(taken)
            }
        }
        return claimed
    }

    /// A message to an Android phone past FCM's per-device quota waits until it would be taken:
    /// the delivery stays first of its activity, and a newer state coalesces it meanwhile.
    private static func pace(_ delivery: inout Delivery, wait: TimeInterval, in tx: any Transaction) throws {
        let due = tx.now.addingTimeInterval(wait)
        delivery.release(dueAt: due)
        try tx.updateDelivery(delivery)
        try log(DeliveryReport(
            delivery: delivery.id, event: delivery.event.rawValue, outcome: .queued, nextAttemptAt: due,
            note: "paced: FCM takes 240 messages a minute and 5,000 an hour to one phone (the sender keeps to 200 and 4,500); this one waits \(DurationText.text(wait))"
        ), of: delivery, in: tx)
    }

    /// Writes down what Apple answered, and performs what the delivery's state machine makes
    /// of it (`Delivery.handle`): delivered; retried later; the token retired (410); the
    /// credential refused (403); or given up.
    func recordDelivery(_ claimed: ClaimedDelivery, answer: TransportAnswer, maximumBackoff: TimeInterval) async throws {
        _ = try await settle([AnsweredDelivery(claimed: claimed, answer: answer)], claim: 0, lease: 0, maximumBackoff: maximumBackoff, round: false)
    }

    /// Records one answer in a transaction (`recordDelivery`).
    private static func record(
        _ answered: AnsweredDelivery, maximumBackoff: TimeInterval, jitter: Double, spends: inout PhoneBudget.Spends, in tx: any Transaction
    ) throws {
        let (claimed, answer) = (answered.claimed, answered.answer)
        guard var delivery = try tx.delivery(claimed.delivery.id) else { return }
        let attempt = claimed.attempt(providerTokenRefreshed: answer.providerTokenRefreshed)
        let actions: [Delivery.Action]
        switch answer.reply {
        case .apns(let reply): actions = delivery.handle(reply, of: attempt, at: tx.now, maximumBackoff: maximumBackoff, jitter: jitter)
        case .fcm(let reply): actions = delivery.handle(reply, of: attempt, at: tx.now, maximumBackoff: maximumBackoff, jitter: jitter)
        }
        // An answer to an attempt no longer current (its lease ran out, another sender took it).
        guard !actions.isEmpty else { return }
        if let token = claimed.phoneToken, let status = answer.status {
            try tx.recordTokenResult(token, at: tx.now, status: status, reason: answer.reason)
        }
        try perform(actions, for: delivery, claimed: claimed, answer: answer, spends: &spends, in: tx)
        let delivered = delivery.state == .delivered ? Duration.seconds(max(0, tx.now.timeIntervalSince(delivery.createdAt))) : nil
        tx.effects.deliveryAnswers.append(DeliveryAnswer(status: answer.status, reason: answer.reason, latency: answer.latency, sinceChange: delivered))
    }

    /// Performs a delivery's actions, in their order.
    private static func perform(
        _ actions: [Delivery.Action], for delivery: Delivery, claimed: ClaimedDelivery, answer: TransportAnswer,
        spends: inout PhoneBudget.Spends, in tx: any Transaction
    ) throws {
        var anotherKey = false
        for action in actions {
            switch action {
            case .save:
                try tx.updateDelivery(delivery)
            case .log(let outcome, let note):
                try log(DeliveryReport(
                    delivery: delivery.id, event: delivery.event.rawValue, outcome: outcome, attempt: delivery.attempts,
                    target: claimed.attemptTarget.shown, environment: claimed.environment, priority: claimed.priority,
                    priorityReason: claimed.priorityReason, apnsId: claimed.isFCM ? nil : answer.apnsId ?? delivery.apnsId, status: answer.status,
                    reason: answer.reason, latencyMs: Double(answer.latency.components.seconds) * 1000 + Double(answer.latency.components.attoseconds) / 1e15,
                    nextAttemptAt: outcome == .retrying ? delivery.nextAttemptAt : nil, note: note
                ), of: delivery, in: tx)
            case .spendBudget:
                guard let deviceId = delivery.deviceId, let perHour = claimed.budgetPerHour else { continue }
                spends.add(PhoneBudget.Key(deviceId: deviceId, bundleId: delivery.bundleId), perHour: perHour, activityId: delivery.activityId)
            case .retireToken(let token, let reason, let since):
                try tx.retirePhoneToken(token, reason: reason, appleTimestamp: since)
            case .stopActivityDelivery:
                guard let activityId = delivery.activityId, var phone = try tx.phoneActivityForSending(activityId) else { continue }
                phone.state = .tokenRetired
                try tx.putPhoneActivity(phone)
            case .refuseCredential(let failure):
                switch claimed.request {
                case .fcm:
                    try tx.setFCMCredentialFailure(bundleId: delivery.bundleId, failure: failure)
                case .apns(let request):
                    anotherKey = try refuseKey(request.credential.credential, failure: failure, in: tx)
                }
            case .nextInOrder:
                tx.effects.deliveriesReady = true
            }
        }
        // One bad key holds nothing while a good one remains: what it held goes again at once.
        if anotherKey { try release(bundleId: delivery.bundleId, in: tx) }
    }

    /// Marks the key Apple refused; returns whether the environment has another key Apple has
    /// not refused (the one before a rotation's new key, say), which signs from now on
    /// (`KeySet.signer`).
    private static func refuseKey(_ key: DeliveryCredential, failure: String, in tx: any Transaction) throws -> Bool {
        try tx.setCredentialFailure(bundleId: key.bundleId, environment: key.environment, keyId: key.keyId, failure: failure)
        return try tx.deliveryCredentials(bundleId: key.bundleId).signer(in: key.environment) != nil
    }

    /// Ends a delivery as `state` and logs it.
    private static func finish(_ delivery: inout Delivery, as state: Delivery.State, report: DeliveryReport, in tx: any Transaction) throws {
        delivery.finish(state, at: tx.now)
        try tx.updateDelivery(delivery)
        try log(report, of: delivery, in: tx)
        // The next delivery of the same activity may go now.
        tx.effects.deliveriesReady = true
    }

    /// Logs a line on the delivery's activity, if it is still there: from the delivery's own
    /// fields, without the activity's lock (`phoneActivityForSending`).
    static func log(_ report: DeliveryReport, of delivery: Delivery, in tx: any Transaction) throws {
        if let channelId = delivery.channelId, delivery.activityId == nil {
            return try tx.reportBroadcast(report, channel: channelId, bundleId: delivery.bundleId)
        }
        // An activity's deliveries carry its device (`queue`).
        guard let activityId = delivery.activityId, let deviceId = delivery.deviceId,
            try tx.attributesType(ofActivity: activityId) != nil
        else { return }
        _ = try tx.append(.delivery(report), bundleId: delivery.bundleId, deviceId: deviceId, activityId: activityId)
    }

    /// Gives back what a sender held when it stopped without finishing (a crash): on a store
    /// only this process writes to, at once; on a shared one, when each lease runs out.
    func releaseAbandonedDeliveries() async throws {
        try await write { tx in
            for var delivery in try tx.claimedDeliveries() {
                delivery.release()
                try tx.updateDelivery(delivery)
            }
            tx.effects.deliveriesReady = true
        }
    }

}

extension String {
    var nilIfEmpty: String? { isEmpty ? nil : self }
}
