import Foundation

/// A delivery's life as a value state machine, beside the activity's (`Activity+Lifecycle`):
///
/// ```
/// pending ──claim──▶ sending ──handle(answer)──▶ delivered | failed        (finished)
///    ▲  ▲               │                    ├─▶ pending at a later time  (retrying)
///    │  └──release──────┘                    └─▶ held, with the credential refused
///    └──────── release(held) ◀── held ◀── hold (no token, no credential yet)
/// pending | held ──coalesce──▶ coalesced      pending ──expire──▶ failed
/// ```
///
/// Every decision is here, with the clock and the randomness passed in; the engine loads the
/// delivery, calls one of these, and performs the actions it returns — it decides nothing.
extension Delivery {
    /// What the sender knows of an attempt besides Apple's answer: what it claimed, and how
    /// it sent it.
    public struct Attempt: Hashable, Sendable {
        /// Where the request went.
        public enum Target: Hashable, Sendable {
            /// An activity's update token.
            case updateToken(String)
            /// A phone's push-to-start token.
            case pushToStartToken(String)
            /// A broadcast channel.
            case channel(String)
            /// An Android phone's FCM registration token for the app.
            case registrationToken(String)
            /// An Android phone's Firebase installation ID for the app (`message.fid`).
            case installationId(String)
        }

        /// The delivery's `attempts` when it was claimed: an answer to an older attempt (whose
        /// lease ran out, and another sender took it) changes nothing.
        public var number: Int
        public var target: Target
        /// `apns-priority`: 10 spends the activity's budget.
        public var priority: Int
        public var environment: APNsEnvironment
        /// Whether the provider token was signed again after Apple refused it and the request
        /// sent a second time (the answer is the second one's).
        public var providerTokenRefreshed: Bool

        public init(number: Int, target: Target, priority: Int, environment: APNsEnvironment, providerTokenRefreshed: Bool = false) {
            self.number = number
            self.target = target
            self.priority = priority
            self.environment = environment
            self.providerTokenRefreshed = providerTokenRefreshed
        }
    }

    /// What the engine does after a transition, in this order.
    public enum Action: Hashable, Sendable {
        /// Writes the delivery as it now stands.
        case save
        /// Adds a line to the delivery log (with the attempt's details, which the engine has).
        case log(DeliveryReport.Outcome, note: String?)
        /// Counts a priority-10 request against the activity's budget for the hour.
        case spendBudget
        /// Retires the phone token: pushes to it are over.
        case retireToken(String, reason: String, invalidSince: Date?)
        /// Stops delivering the activity to its phone: its update token is gone.
        case stopActivityDelivery
        /// Marks the credential of the delivery's app and environment refused, with why: every
        /// delivery of it waits, held, until it is registered again.
        case refuseCredential(String)
        /// The next delivery of the same order key may go now.
        case nextInOrder
    }

    /// How long a retry waits: doubling from a second, at most `limit`, scaled by `jitter`
    /// (0…1 maps to half the wait…all of it) so retries from many deliveries spread out.
    public static func backoff(after attempts: Int, limit: TimeInterval, jitter: Double) -> TimeInterval {
        let full = min(limit, pow(2, Double(max(0, attempts - 1))))
        return full / 2 + full / 2 * min(1, max(0, jitter))
    }

    /// Whether `apns-expiration` has passed: Apple would not deliver it any more.
    public func hasExpired(at now: Date) -> Bool {
        expiration.map { $0 <= now } ?? false
    }

    /// Takes the delivery for one attempt: it is being sent, held for `lease` seconds.
    public mutating func claim(at now: Date, lease: TimeInterval) {
        state = .sending
        attempts += 1
        leaseUntil = now.addingTimeInterval(lease)
    }

    /// Holds the delivery until someone else brings what it waits for (a token, a credential).
    public mutating func hold() {
        state = .held
        leaseUntil = nil
    }

    /// Gives a taken or held delivery back to the queue: due when it was (a sender that stopped
    /// mid-request), or at `now` (what a held one waited for may have come).
    public mutating func release(dueAt now: Date? = nil) {
        state = .pending
        leaseUntil = nil
        if let now { nextAttemptAt = now }
    }

    /// Whether a person may have it sent again at once: one that failed, is held, or waits for
    /// its next attempt — not one being sent, delivered, or replaced by a newer change.
    public var canBeSentAgain: Bool { [.failed, .held, .pending].contains(state) }

    /// Sends it again at once, as a person asked (`canBeSentAgain`).
    public mutating func sendAgain(at now: Date) {
        release(dueAt: now)
        finishedAt = nil
    }

    /// Ends the delivery as `state` (delivered, failed, coalesced or dropped).
    public mutating func finish(_ state: State, at now: Date) {
        self.state = state
        finishedAt = now
        leaseUntil = nil
    }

    /// Decides what Apple's answer to an attempt makes of the delivery, and returns what the
    /// engine must do; nothing when the answer is to an attempt no longer current (the lease
    /// ran out and another sender took it, or it is not being sent).
    ///
    /// - Parameters:
    ///   - maximumBackoff: The longest wait before a retry, in seconds.
    ///   - jitter: A draw from 0…1 that spreads retries (`backoff`); tests pass a fixed one.
    public mutating func handle(
        _ answer: APNsAnswer, of attempt: Attempt, at now: Date, maximumBackoff: TimeInterval, jitter: Double
    ) -> [Action] {
        guard state == .sending, attempts == attempt.number else { return [] }
        switch answer {
        case .accepted:
            finish(.delivered, at: now)
            // An end spends nothing: a phone always lets an activity end.
            let spends = attempt.priority == 10 && activityId != nil && event != .end && attempt.target.spendsBudget
            return [.save] + (spends ? [.spendBudget] : []) + [.log(.delivered, note: refreshed(attempt)), .nextInOrder]
        case .failed(let failure):
            return handle(failure, of: attempt, at: now, maximumBackoff: maximumBackoff, jitter: jitter, waiting: attempt.environment.rawValue)
        case .refused(let refusal):
            return handle(refusal, of: attempt, at: now, maximumBackoff: maximumBackoff, jitter: jitter)
        }
    }

    /// No answer: a credential that cannot be used holds every delivery of it (`waiting` names
    /// them); anything else is tried again after the backoff.
    mutating func handle(
        _ failure: TransportFailure, of attempt: Attempt, at now: Date, maximumBackoff: TimeInterval, jitter: Double, waiting: String
    ) -> [Action] {
        guard failure.kind == .unusableCredential else {
            return retry(attempt, at: now, maximumBackoff: maximumBackoff, jitter: jitter, because: failure.description)
        }
        return holdForCredential(
            failure: failure.detail,
            note: "the credential cannot be used (\(failure.detail)): nothing was sent, and every delivery of \(waiting) waits until the credential is registered again"
        )
    }

    /// Apple's refusals, by status and reason (docs/delivery.md, "Apple's answers").
    private mutating func handle(
        _ refusal: APNsRefusal, of attempt: Attempt, at now: Date, maximumBackoff: TimeInterval, jitter: Double
    ) -> [Action] {
        let answer = "\(refusal.status) \(refusal.text ?? "(no reason)")"
        switch (refusal.status, refusal.reason) {
        case (410, _):
            return tokenGone(refusal, of: attempt, at: now)
        case (403, _):
            // Every request with this credential would be refused alike: they wait for it.
            var why = refusal.text ?? "403"
            if attempt.providerTokenRefreshed { why += " after the provider token was signed again" }
            let whose = refusal.reason == .expiredProviderToken || refusal.reason == .invalidProviderToken ? "the provider token" : "the credential"
            return holdForCredential(
                failure: "Apple refused \(whose) (\(why))",
                note: "Apple refused \(whose)\(attempt.providerTokenRefreshed ? " twice" : "") (\(why)): every delivery of \(attempt.environment.rawValue) waits until the credential is registered again"
            )
        case (429, _), (500...599, _), (400, .idleTimeout?):
            // Apple's or the connection's moment, not the request: the same request goes again.
            return retry(attempt, at: now, maximumBackoff: maximumBackoff, jitter: jitter, because: "Apple answered \(answer)")
        default:
            finish(.failed, at: now)
            var why = "Apple refused it (\(answer)): never retried, the request itself is wrong"
            switch refusal.reason {
            case .badDeviceToken?:
                why += "; a token that never worked is most often one of the other environment — \(attempt.environment.rawValue) was used: is the app built for \(attempt.environment == .development ? "production (TestFlight, App Store)" : "development (Xcode)")?"
            case .deviceTokenNotForTopic?:
                why += "; the token belongs to another app than \(bundleId)"
            case .channelNotRegistered?:
                why += "; the channel no longer exists at Apple"
            case .featureNotEnabled?:
                why += "; broadcast is not enabled for \(bundleId) (the App ID's Broadcast capability, in the developer portal)"
            default:
                break
            }
            return [.save, .log(.failed, note: joined(refreshed(attempt), why)), .nextInOrder]
        }
    }

    /// 410: the token is no longer valid — retired, and nothing more goes to it.
    private mutating func tokenGone(_ refusal: APNsRefusal, of attempt: Attempt, at now: Date) -> [Action] {
        finish(.failed, at: now)
        let since = refusal.timestamp.map { Date(timeIntervalSince1970: Double($0) / 1000) }
        var actions: [Action] = [.save]
        switch attempt.target {
        case .updateToken(let token):
            actions += [.retireToken(token, reason: refusal.text ?? "Unregistered", invalidSince: since), .stopActivityDelivery]
        case .pushToStartToken(let token), .registrationToken(let token), .installationId(let token):
            actions.append(.retireToken(token, reason: refusal.text ?? "Unregistered", invalidSince: since))
        case .channel:
            // Apple gives no 410 for a channel; one that came from elsewhere ends this delivery only.
            return actions + [.log(.failed, note: "Apple answered 410 \(refusal.text ?? "") for a channel: not retried"), .nextInOrder]
        }
        let retired = "the token is retired\(since.map { " (invalid since \(Self.iso($0)))" } ?? ""); nothing more goes to it"
        return actions + [.log(.tokenRetired, note: joined(refreshed(attempt), retired)), .nextInOrder]
    }

    /// Sends it again after the backoff, and not before `atLeast` seconds (a `Retry-After`) —
    /// unless it would expire first.
    mutating func retry(
        _ attempt: Attempt, at now: Date, maximumBackoff: TimeInterval, jitter: Double, atLeast: TimeInterval = 0, because why: String
    ) -> [Action] {
        let next = now.addingTimeInterval(max(atLeast, Self.backoff(after: attempts, limit: maximumBackoff, jitter: jitter)))
        if let expiration, next >= expiration {
            finish(.failed, at: now)
            return [.save, .log(.failed, note: "\(why); given up after \(attempts) attempts: it would expire before the next"), .nextInOrder]
        }
        release()
        nextAttemptAt = next
        return [.save, .log(.retrying, note: joined(refreshed(attempt), why))]
    }

    /// Holds it because its credential cannot be used; the credential is marked so the
    /// deliveries behind it wait too.
    mutating func holdForCredential(failure: String, note: String) -> [Action] {
        hold()
        return [.refuseCredential(failure), .save, .log(.held, note: note)]
    }

    func refreshed(_ attempt: Attempt) -> String? {
        attempt.providerTokenRefreshed ? "the provider token was signed again after Apple refused it" : nil
    }

    func joined(_ parts: String?...) -> String? {
        let text = parts.compactMap { $0 }.joined(separator: "; ")
        return text.isEmpty ? nil : text
    }

    private static func iso(_ date: Date) -> String { ISO8601DateFormatter().string(from: date) }
}

extension Delivery.Attempt.Target {
    /// Whether a priority-10 request to it spends the app's budget on the phone: only an
    /// activity's update token does (a push-to-start has its own budget, a broadcast none, and
    /// Android none at all).
    public var spendsBudget: Bool {
        if case .updateToken = self { return true }
        return false
    }

    /// As the delivery log shows it: a token shortened, an installation ID after `fid`, or the
    /// channel.
    public var shown: String {
        switch self {
        case .updateToken(let token), .pushToStartToken(let token), .registrationToken(let token): PhoneToken.shorten(token)
        case .installationId(let fid): "fid \(fid)"
        case .channel(let id): "channel \(id)"
        }
    }

    /// The FCM address it is, for a message to an Android phone.
    public var fcmAddress: FCMAddress? {
        switch self {
        case .registrationToken(let token): .token(token)
        case .installationId(let fid): .fid(fid)
        case .updateToken, .pushToStartToken, .channel: nil
        }
    }
}
