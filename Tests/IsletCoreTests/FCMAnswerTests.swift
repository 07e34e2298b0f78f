import Foundation
import IsletCore
import Testing

/// FCM's answers read where they enter (`FCMAnswer`), and what each makes of a delivery to an
/// Android phone (`Delivery.handle`), without a server: every error code FCM documents, the
/// statuses it does not name, `Retry-After`, and a renewed access token.
@Suite("Delivery state machine: FCM's answers")
struct FCMAnswerTests {
    typealias Verdict = DeliveryMachineTests.Verdict
    let machine = DeliveryMachineTests()
    let registration = "fcm-registration-token:APA91b" + String(repeating: "x", count: 40)

    /// Every error code FCM documents, as docs/android.md ("FCM's answers") says it is decided.
    static let table: [FCMErrorCode: Verdict] = [
        .invalidArgument: .failed, .senderIdMismatch: .failed,
        .unregistered: .tokenRetired,
        .quotaExceeded: .retried, .unavailable: .retried, .internal: .retried, .unspecifiedError: .retried,
        // 401 after the sender already fetched a new access token once.
        .thirdPartyAuthError: .credentialRefused,
    ]

    func attempt(refreshed: Bool = true) -> Delivery.Attempt {
        Delivery.Attempt(number: 1, target: .registrationToken(registration), priority: 10, environment: .production, providerTokenRefreshed: refreshed)
    }

    /// An error body as FCM writes it.
    static func body(_ code: FCMErrorCode, message: String = "Requested entity was not found.") -> Data {
        Data(
            """
            {"error": {"code": \(code.statusCode), "message": "\(message)", "status": "\(code.googleStatus)",
              "details": [{"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "\(code.rawValue)"}]}}
            """.utf8
        )
    }

    @Test func everyErrorCodeFCMDocumentsHasADecision() {
        #expect(Set(Self.table.keys) == Set(FCMErrorCode.allCases), "an error code without a row: decide it, and say so in docs/android.md")
    }

    @Test(arguments: FCMErrorCode.allCases)
    func eachErrorCodeIsReadFromItsBodyAndDecidedAsTheTableSays(_ code: FCMErrorCode) throws {
        let answer = FCMAnswer(status: code.statusCode, body: Self.body(code), retryAfter: nil)
        guard case .refused(let refusal) = answer else { Issue.record("\(answer)"); return }
        #expect(refusal.errorCode == code)
        #expect(refusal.googleStatus == code.googleStatus)
        #expect(refusal.message == "Requested entity was not found.")

        var delivery = machine.sending()
        let actions = delivery.handle(answer, of: attempt(), at: machine.t0, maximumBackoff: 300, jitter: 1)
        #expect(machine.verdict(of: actions, delivery) == Self.table[code], "\(code.rawValue) \(code.statusCode): \(actions)")
        #expect(actions.first == .save || actions.contains(.save), "the delivery is written")
        #expect(actions.contains(.nextInOrder) == (delivery.state == .failed))
        #expect(delivery.leaseUntil == nil)
        #expect(actions.note?.contains(code.rawValue) == true, "the log says FCM's code: \(actions.note ?? "")")
    }

    @Test func aStatusWithoutFCMsBodyIsDecidedByItsClass() {
        // A proxy's page, or a status FCM does not document. A 404 without UNREGISTERED retires
        // nothing: a wrong url would otherwise retire every token it meets.
        for (status, expected) in [(502, Verdict.retried), (504, .retried), (429, .retried), (404, .failed), (401, .credentialRefused), (400, .failed), (403, .failed), (418, .failed)] {
            var delivery = machine.sending()
            let answer = FCMAnswer(status: status, body: Data("<html>Bad Gateway</html>".utf8), retryAfter: nil)
            let actions = delivery.handle(answer, of: attempt(), at: machine.t0, maximumBackoff: 300, jitter: 1)
            #expect(machine.verdict(of: actions, delivery) == expected, "\(status): \(actions)")
        }
    }

    @Test func acceptedIsDeliveredWithTheMessagesNameAndSpendsNoBudget() {
        let answer = FCMAnswer(status: 200, body: Data(#"{"name": "projects/islet-demo/messages/0:1700000000%abc"}"#.utf8), retryAfter: nil)
        #expect(answer == .accepted(name: "projects/islet-demo/messages/0:1700000000%abc"))
        var delivery = machine.sending()
        let actions = delivery.handle(answer, of: attempt(refreshed: false), at: machine.t0, maximumBackoff: 300, jitter: 1)
        #expect(delivery.state == .delivered)
        #expect(actions == [.save, .log(.delivered, note: "FCM named it projects/islet-demo/messages/0:1700000000%abc"), .nextInOrder])
    }

    @Test func unregisteredRetiresTheRegistrationTokenAndStopsTheActivity() {
        var delivery = machine.sending()
        let actions = delivery.handle(
            FCMAnswer(status: 404, body: Self.body(.unregistered), retryAfter: nil), of: attempt(refreshed: false), at: machine.t0,
            maximumBackoff: 300, jitter: 1
        )
        #expect(actions.contains(.retireToken(registration, reason: "UNREGISTERED", invalidSince: nil)))
        #expect(actions.contains(.stopActivityDelivery))
        #expect(delivery.state == .failed)
    }

    /// An installation ID FCM no longer knows (the app asked for a token again) is retired as a
    /// token is, and the log says which it was.
    @Test func unregisteredRetiresAnInstallationIdAsAToken() {
        var delivery = machine.sending()
        let fid = "cFqg2ZkRS9Sx8VZk1dA1Qm"
        let actions = delivery.handle(
            FCMAnswer(status: 404, body: Self.body(.unregistered), retryAfter: nil),
            of: Delivery.Attempt(number: 1, target: .installationId(fid), priority: 10, environment: .production), at: machine.t0,
            maximumBackoff: 300, jitter: 1
        )
        #expect(actions.contains(.retireToken(fid, reason: "UNREGISTERED", invalidSince: nil)))
        #expect(actions.contains { if case .log(.tokenRetired, let note) = $0 { note?.contains("the installation ID is retired") == true } else { false } })
        #expect(Delivery.Attempt.Target.installationId(fid).shown == "fid \(fid)")
    }

    @Test func quotaExceededWaitsAtLeastRetryAfterOrAMinute() {
        for (header, wait) in [("120", 120.0), (nil, Delivery.fcmQuotaWait), ("soon", Delivery.fcmQuotaWait), ("99999999999", Delivery.fcmQuotaWait)] {
            var delivery = machine.sending()
            let answer = FCMAnswer(status: 429, body: Self.body(.quotaExceeded), retryAfter: header)
            _ = delivery.handle(answer, of: attempt(), at: machine.t0, maximumBackoff: 300, jitter: 1)
            #expect(delivery.state == .pending)
            #expect(delivery.nextAttemptAt == machine.t0.addingTimeInterval(wait), "Retry-After \(header ?? "none")")
        }
    }

    @Test func unavailableHonoursRetryAfterBeyondTheBackoff() {
        var delivery = machine.sending()
        _ = delivery.handle(
            FCMAnswer(status: 503, body: Self.body(.unavailable), retryAfter: "30"), of: attempt(), at: machine.t0, maximumBackoff: 300, jitter: 1
        )
        #expect(delivery.nextAttemptAt == machine.t0.addingTimeInterval(30))
        // Without one, the backoff alone: the first retry after a second.
        var other = machine.sending()
        _ = other.handle(FCMAnswer(status: 500, body: Self.body(.internal), retryAfter: nil), of: attempt(), at: machine.t0, maximumBackoff: 300, jitter: 1)
        #expect(other.nextAttemptAt == machine.t0.addingTimeInterval(1))
    }

    @Test func aRetryThatWouldOutliveTheMessageFailsInstead() {
        var delivery = machine.sending(expiration: machine.t0.addingTimeInterval(30))
        let actions = delivery.handle(
            FCMAnswer(status: 429, body: Self.body(.quotaExceeded), retryAfter: nil), of: attempt(), at: machine.t0, maximumBackoff: 300, jitter: 1
        )
        #expect(delivery.state == .failed)
        #expect(actions.note?.contains("it would expire before the next") == true)
    }

    @Test func aRefusedAccessTokenHoldsEveryDeliveryOfTheApp() throws {
        var delivery = machine.sending()
        let refusal = FCMRefusal(status: 401, googleStatus: "UNAUTHENTICATED", message: "Request had invalid authentication credentials.")
        let actions = delivery.handle(.refused(refusal), of: attempt(refreshed: true), at: machine.t0, maximumBackoff: 300, jitter: 1)
        #expect(delivery.state == .held)
        let note = try #require(actions.note)
        #expect(note.contains("FCM refused the access token twice (401 UNAUTHENTICATED (Request had invalid authentication credentials.) after a new access token)"), "\(note)")
    }

    @Test func transportFailuresAreRetriedAndAnUnusableCredentialHolds() {
        for kind in TransportFailure.Kind.allCases {
            var delivery = machine.sending()
            let actions = delivery.handle(FCMAnswer.failed(TransportFailure(kind, "x")), of: attempt(), at: machine.t0, maximumBackoff: 300, jitter: 1)
            #expect(machine.verdict(of: actions, delivery) == (kind == .unusableCredential ? .credentialRefused : .retried), "\(kind)")
        }
    }

    @Test func anAnswerToAnAttemptNoLongerCurrentChangesNothing() {
        var delivery = machine.sending()
        var stale = attempt()
        stale.number = 0
        #expect(delivery.handle(FCMAnswer(status: 200, body: Data(), retryAfter: nil), of: stale, at: machine.t0, maximumBackoff: 300, jitter: 1).isEmpty)
        #expect(delivery.state == .sending)
    }
}
