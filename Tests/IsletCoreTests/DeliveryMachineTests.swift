import Foundation
import IsletCore
import Testing

/// The delivery's state machine (`Delivery.handle`), without a server: every status and
/// reason of Apple's table, every way a transport fails, and the transitions around them.
@Suite("Delivery state machine")
struct DeliveryMachineTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    let token = String(repeating: "ab", count: 32)

    /// What Apple's answer makes of a delivery, by kind.
    enum Verdict: Equatable {
        /// Sent again later.
        case retried
        /// Held, its credential marked refused.
        case credentialRefused
        /// The token retired, the delivery over.
        case tokenRetired
        /// Over, never retried.
        case failed
    }

    /// Every reason of Apple's table, as docs/delivery.md ("Apple's answers") says it is decided.
    static let table: [APNsReason: Verdict] = [
        // 400: the request is wrong; sending it again would be refused again.
        .badCollapseId: .failed, .badDeviceToken: .failed, .badExpirationDate: .failed, .badMessageId: .failed,
        .badPriority: .failed, .badTopic: .failed, .deviceTokenNotForTopic: .failed, .duplicateHeaders: .failed,
        .invalidPushType: .failed, .missingDeviceToken: .failed, .missingTopic: .failed, .payloadEmpty: .failed,
        .topicDisallowed: .failed, .badRequestPayload: .failed, .featureNotEnabled: .failed, .missingChannelId: .failed,
        .badChannelId: .failed, .channelNotRegistered: .failed, .missingPushType: .failed, .badRequestParams: .failed,
        .cannotCreateChannelConfig: .failed,
        // 400, but the connection's: it idled out.
        .idleTimeout: .retried,
        // 403: the credential; every request with it would be refused alike.
        .badCertificate: .credentialRefused, .badCertificateEnvironment: .credentialRefused,
        .expiredProviderToken: .credentialRefused, .forbidden: .credentialRefused, .invalidProviderToken: .credentialRefused,
        .missingProviderToken: .credentialRefused, .unrelatedKeyIdInToken: .credentialRefused,
        .badEnvironmentKeyIdInToken: .credentialRefused, .topicMismatch: .credentialRefused,
        // 404, 405, 413: never retried.
        .badPath: .failed, .methodNotAllowed: .failed, .payloadTooLarge: .failed,
        // 410: the token is gone.
        .unregistered: .tokenRetired, .expiredToken: .tokenRetired,
        // 429, 500, 503: Apple's moment; again, later.
        .tooManyProviderTokenUpdates: .retried, .tooManyRequests: .retried, .internalServerError: .retried,
        .serviceUnavailable: .retried, .shutdown: .retried,
    ]

    // MARK: Helpers

    /// A delivery being sent: claimed at `t0` for its first attempt.
    func sending(expiration: Date? = nil, activity: ActivityID? = "A1") -> Delivery {
        var delivery = Delivery(
            id: 7, order: .activity("A1"), activityId: activity, bundleId: "com.example.bike", deviceId: "phone", event: .update,
            payload: "{}", alert: false, expiration: expiration ?? t0.addingTimeInterval(8 * 3600), nextAttemptAt: t0, createdAt: t0
        )
        delivery.claim(at: t0, lease: 60)
        return delivery
    }

    func attempt(_ target: Delivery.Attempt.Target? = nil, priority: Int = 10, number: Int = 1, refreshed: Bool = false) -> Delivery.Attempt {
        Delivery.Attempt(
            number: number, target: target ?? .updateToken(token), priority: priority, environment: .development, providerTokenRefreshed: refreshed
        )
    }

    func verdict(of actions: [Delivery.Action], _ delivery: Delivery) -> Verdict? {
        switch delivery.state {
        case .pending where actions.contains(.log(.retrying, note: actions.note)): .retried
        case .held where actions.contains { if case .refuseCredential = $0 { true } else { false } }: .credentialRefused
        case .failed where actions.contains { if case .retireToken = $0 { true } else { false } }: .tokenRetired
        case .failed: .failed
        default: nil
        }
    }

    // MARK: Apple's table

    @Test func everyReasonOfApplesTableHasADecision() {
        #expect(Set(Self.table.keys) == Set(APNsReason.allCases), "a reason without a row: decide it, and say so in docs/delivery.md")
    }

    @Test(arguments: APNsReason.allCases)
    func eachReasonIsDecidedAsTheTableSays(_ reason: APNsReason) throws {
        var delivery = sending()
        let actions = delivery.handle(.refused(APNsRefusal(reason, timestamp: 1_799_000_000_000)), of: attempt(), at: t0, maximumBackoff: 300, jitter: 1)
        let expected = try #require(Self.table[reason])
        #expect(verdict(of: actions, delivery) == expected, "\(reason.rawValue) \(reason.statusCode): \(actions)")
        #expect(actions.first { $0 == .save } != nil, "the delivery is written")
        // Whatever ends it lets the next of its activity go; a retry or a hold keeps its turn.
        #expect(actions.contains(.nextInOrder) == (delivery.state == .failed))
        #expect(delivery.leaseUntil == nil)
    }

    @Test func aStatusApplesTableDoesNotNameIsDecidedByItsClass() {
        for (status, expected) in [(502, Verdict.retried), (504, .retried), (429, .retried), (418, .failed), (400, .failed), (301, .failed), (403, .credentialRefused), (410, .tokenRetired)] {
            var delivery = sending()
            let actions = delivery.handle(
                .refused(APNsRefusal(status: status, reason: "SomethingNew")), of: attempt(), at: t0, maximumBackoff: 300, jitter: 1
            )
            #expect(verdict(of: actions, delivery) == expected, "\(status)")
        }
    }

    // MARK: 200

    @Test func acceptedAtPriority10SpendsTheAppsBudgetOnThePhone() {
        var delivery = sending()
        let actions = delivery.handle(.accepted(status: 200), of: attempt(priority: 10), at: t0.addingTimeInterval(1), maximumBackoff: 300, jitter: 1)
        #expect(delivery.state == .delivered)
        #expect(delivery.finishedAt == t0.addingTimeInterval(1))
        #expect(actions == [.save, .spendBudget, .log(.delivered, note: nil), .nextInOrder])
    }

    /// Only an update token's priority-10 request spends: priority 5, a broadcast, a
    /// push-to-start (its own budget on the phone) and an FCM message (Android has none) do not.
    @Test func acceptedAtPriority5OrOnAChannelOrAPushToStartSpendsNothing() {
        var low = sending()
        #expect(!low.handle(.accepted(status: 200), of: attempt(priority: 5), at: t0, maximumBackoff: 300, jitter: 1).contains(.spendBudget))
        for target in [Delivery.Attempt.Target.pushToStartToken(token), .registrationToken("fcm-token")] {
            var start = sending()
            #expect(!start.handle(.accepted(status: 200), of: attempt(target), at: t0, maximumBackoff: 300, jitter: 1).contains(.spendBudget))
        }
        var broadcast = sending(activity: nil)
        let actions = broadcast.handle(.accepted(status: 200), of: attempt(.channel("ch"), priority: 10), at: t0, maximumBackoff: 300, jitter: 1)
        #expect(!actions.contains(.spendBudget))
        #expect(broadcast.state == .delivered)
    }

    // MARK: 410

    @Test func aGoneUpdateTokenIsRetiredAndTheActivityStopsBeingDelivered() throws {
        var delivery = sending()
        let actions = delivery.handle(
            .refused(APNsRefusal(.unregistered, timestamp: 1_799_999_000_000)), of: attempt(), at: t0, maximumBackoff: 300, jitter: 1
        )
        #expect(actions.contains(.retireToken(token, reason: "Unregistered", invalidSince: Date(timeIntervalSince1970: 1_799_999_000))))
        #expect(actions.contains(.stopActivityDelivery))
        let note = try #require(actions.note)
        #expect(note.contains("the token is retired (invalid since 2027-01-15T07:43:20Z)"), "\(note)")
        #expect(delivery.state == .failed)
    }

    @Test func aGonePushToStartTokenIsRetiredButTheActivityIsNotStopped() {
        var delivery = sending()
        let actions = delivery.handle(.refused(APNsRefusal(.expiredToken)), of: attempt(.pushToStartToken(token)), at: t0, maximumBackoff: 300, jitter: 1)
        #expect(actions.contains(.retireToken(token, reason: "ExpiredToken", invalidSince: nil)))
        #expect(!actions.contains(.stopActivityDelivery))
    }

    // MARK: 403

    @Test func aProviderTokenRefusedAfterItWasSignedAgainHoldsEveryDeliveryOfTheCredential() throws {
        var delivery = sending()
        let actions = delivery.handle(.refused(APNsRefusal(.expiredProviderToken)), of: attempt(refreshed: true), at: t0, maximumBackoff: 300, jitter: 1)
        #expect(delivery.state == .held)
        #expect(actions.contains(.refuseCredential("Apple refused the provider token (ExpiredProviderToken after the provider token was signed again)")))
        #expect(try #require(actions.note).contains("twice"))
    }

    // MARK: Retries

    @Test func aRetryWaitsTheBackoffDoublingFromASecond() {
        var delivery = sending()
        for (attempt, wait) in [(1, 1.0), (2, 2), (3, 4), (4, 8), (9, 256), (10, 300), (30, 300)] {
            delivery.state = .sending
            delivery.attempts = attempt
            _ = delivery.handle(.refused(APNsRefusal(.serviceUnavailable)), of: self.attempt(number: attempt), at: t0, maximumBackoff: 300, jitter: 1)
            #expect(delivery.state == .pending)
            #expect(delivery.nextAttemptAt == t0.addingTimeInterval(wait), "attempt \(attempt)")
        }
    }

    @Test func jitterSpreadsARetryOverTheSecondHalfOfItsWait() {
        #expect(Delivery.backoff(after: 4, limit: 300, jitter: 0) == 4)
        #expect(Delivery.backoff(after: 4, limit: 300, jitter: 0.5) == 6)
        #expect(Delivery.backoff(after: 4, limit: 300, jitter: 1) == 8)
        #expect(Delivery.backoff(after: 4, limit: 300, jitter: 7) == 8)
    }

    @Test func aRetryThatWouldComeAfterTheExpirationGivesUp() throws {
        var delivery = sending(expiration: t0.addingTimeInterval(1))
        let actions = delivery.handle(.refused(APNsRefusal(.tooManyRequests)), of: attempt(), at: t0, maximumBackoff: 300, jitter: 1)
        #expect(delivery.state == .failed)
        #expect(try #require(actions.note).contains("given up after 1 attempts: it would expire before the next"))
        #expect(actions.contains(.nextInOrder))
    }

    // MARK: The transport's failures

    @Test(arguments: TransportFailure.Kind.allCases.filter { $0 != .unusableCredential })
    func noAnswerIsRetriedWhateverTheTransportMet(_ kind: TransportFailure.Kind) throws {
        var delivery = sending()
        let actions = delivery.handle(APNsAnswer.failed(TransportFailure(kind, "boom")), of: attempt(), at: t0, maximumBackoff: 300, jitter: 1)
        #expect(delivery.state == .pending)
        #expect(delivery.nextAttemptAt == t0.addingTimeInterval(1))
        #expect(try #require(actions.note).hasSuffix("boom"))
        #expect(!actions.contains(.nextInOrder), "its activity's later deliveries keep waiting behind it")
    }

    @Test func anUnusableCredentialSendsNothingAndHoldsTheCredentialsDeliveries() {
        var delivery = sending()
        let actions = delivery.handle(APNsAnswer.failed(TransportFailure(.unusableCredential, "port 65535")), of: attempt(), at: t0, maximumBackoff: 300, jitter: 1)
        #expect(delivery.state == .held)
        #expect(actions.contains(.refuseCredential("port 65535")))
    }

    // MARK: Around the answer

    @Test func anAnswerToAnOlderAttemptChangesNothing() {
        var delivery = sending()
        delivery.claim(at: t0.addingTimeInterval(60), lease: 60)  // the lease ran out; another sender took it
        let before = delivery
        #expect(delivery.handle(.accepted(status: 200), of: attempt(number: 1), at: t0, maximumBackoff: 300, jitter: 1).isEmpty)
        #expect(delivery == before)
    }

    @Test func anAnswerToADeliveryNotBeingSentChangesNothing() {
        var delivery = sending()
        delivery.finish(.coalesced, at: t0)
        let before = delivery
        #expect(delivery.handle(.refused(APNsRefusal(.unregistered)), of: attempt(), at: t0, maximumBackoff: 300, jitter: 1).isEmpty)
        #expect(delivery == before)
    }

    @Test func aClaimTakesItForOneAttemptUnderALease() {
        let delivery = sending()
        #expect(delivery.state == .sending)
        #expect(delivery.attempts == 1)
        #expect(delivery.leaseUntil == t0.addingTimeInterval(60))
    }

    @Test func releasedItIsDueAsItWasOrAtOnce() {
        var abandoned = sending()
        abandoned.release()
        #expect(abandoned.state == .pending && abandoned.nextAttemptAt == t0 && abandoned.leaseUntil == nil)
        var held = sending()
        held.hold()
        held.release(dueAt: t0.addingTimeInterval(30))
        #expect(held.state == .pending && held.nextAttemptAt == t0.addingTimeInterval(30))
    }

    @Test func onlyAFailedHeldOrWaitingDeliveryIsSentAgain() {
        var delivery = sending()
        #expect(!delivery.canBeSentAgain)
        delivery.finish(.failed, at: t0)
        #expect(delivery.canBeSentAgain)
        delivery.sendAgain(at: t0.addingTimeInterval(5))
        #expect(delivery.state == .pending && delivery.finishedAt == nil && delivery.nextAttemptAt == t0.addingTimeInterval(5))
        delivery.finish(.coalesced, at: t0)
        #expect(!delivery.canBeSentAgain)
    }

    @Test func anExpiredDeliveryIsToldApart() {
        let delivery = sending(expiration: t0)
        #expect(delivery.hasExpired(at: t0))
        #expect(!sending(expiration: t0.addingTimeInterval(1)).hasExpired(at: t0))
    }

    @Test func anHTTPAnswerIsTakenOrRefusedByItsStatus() {
        #expect(APNsAnswer(status: 200, reason: nil, timestamp: nil) == .accepted(status: 200))
        #expect(APNsAnswer(status: 204, reason: nil, timestamp: nil) == .accepted(status: 204))
        let refused = APNsAnswer(status: 410, reason: "Unregistered", timestamp: 5)
        #expect(refused == .refused(APNsRefusal(.unregistered, timestamp: 5)))
        #expect(refused.status == 410 && refused.reason == "Unregistered")
        #expect(APNsRefusal(status: 400, reason: "NotApples").reason == nil)
    }
}

extension [Delivery.Action] {
    /// The note of the log line among them.
    var note: String? {
        for case .log(_, let note) in self { return note }
        return nil
    }
}
