import Foundation

/// What FCM's answers make of a delivery to an Android phone (docs/android.md, "FCM's answers"):
/// the same states and actions as Apple's (`Delivery+Answer.swift`), read from FCM's statuses
/// and error codes.
extension Delivery {
    /// How long a `429` waits when FCM gives no `Retry-After`: its per-device quota is counted
    /// by the minute.
    public static let fcmQuotaWait: TimeInterval = 60

    /// Decides what FCM's answer to an attempt makes of the delivery, and returns what the
    /// engine must do; nothing when the answer is to an attempt no longer current.
    ///
    /// `attempt.providerTokenRefreshed` says, for FCM, that a new access token was fetched after
    /// FCM answered `401` and the request sent once more (the answer is the second one's).
    public mutating func handle(
        _ answer: FCMAnswer, of attempt: Attempt, at now: Date, maximumBackoff: TimeInterval, jitter: Double
    ) -> [Action] {
        guard state == .sending, attempts == attempt.number else { return [] }
        switch answer {
        case .accepted(let name):
            finish(.delivered, at: now)
            return [.save, .log(.delivered, note: joined(accessTokenRenewed(attempt), name.map { "FCM named it \($0)" })), .nextInOrder]
        case .failed(let failure):
            return handle(failure, of: attempt, at: now, maximumBackoff: maximumBackoff, jitter: jitter, waiting: "the app to Android")
        case .refused(let refusal):
            return handle(refusal, of: attempt, at: now, maximumBackoff: maximumBackoff, jitter: jitter)
        }
    }

    /// FCM's refusals, by status and error code.
    private mutating func handle(
        _ refusal: FCMRefusal, of attempt: Attempt, at now: Date, maximumBackoff: TimeInterval, jitter: Double
    ) -> [Action] {
        let answer = "FCM answered \(refusal.text)"
        switch (refusal.status, refusal.errorCode) {
        case (_, .unregistered?):
            return registrationGone(refusal, of: attempt, at: now)
        case (401, _):
            // The access token was already fetched anew once for this request: the service
            // account itself is refused, and every message of it would be alike.
            let why = refusal.text + (attempt.providerTokenRefreshed ? " after a new access token" : "")
            return holdForCredential(
                failure: "FCM refused the service account's access token (\(why))",
                note: "FCM refused the access token\(attempt.providerTokenRefreshed ? " twice" : "") (\(why)): every delivery of the app to Android waits until its FCM credential is registered again"
            )
        case (429, _):
            let wait = refusal.retryAfter ?? Self.fcmQuotaWait
            return retry(
                attempt, at: now, maximumBackoff: maximumBackoff, jitter: jitter, atLeast: wait,
                because: "\(answer): a quota, waiting at least \(Int(wait)) s"
            )
        case (500...599, _):
            return retry(attempt, at: now, maximumBackoff: maximumBackoff, jitter: jitter, atLeast: refusal.retryAfter ?? 0, because: answer)
        default:
            finish(.failed, at: now)
            var why = "\(answer): never retried, the request itself is wrong"
            if refusal.errorCode == .senderIdMismatch {
                why += "; the registration token belongs to another Firebase project than the service account's"
            } else if refusal.errorCode == nil, refusal.status == 404 {
                // Not FCM's UNREGISTERED: a wrong address must not retire every token.
                why += "; the answer is not FCM's (no error code): is the credential's url an FCM host?"
            }
            return [.save, .log(.failed, note: joined(accessTokenRenewed(attempt), why)), .nextInOrder]
        }
    }

    /// 404 `UNREGISTERED`: the app was uninstalled or the token expired — retired, and nothing
    /// more goes to it.
    private mutating func registrationGone(_ refusal: FCMRefusal, of attempt: Attempt, at now: Date) -> [Action] {
        finish(.failed, at: now)
        guard let address = attempt.target.fcmAddress else {
            return [.save, .log(.failed, note: "FCM answered \(refusal.text) for a target that is not an FCM address: not retried"), .nextInOrder]
        }
        return [
            .save, .retireToken(address.value, reason: refusal.errorCodeText ?? "UNREGISTERED", invalidSince: nil), .stopActivityDelivery,
            .log(.tokenRetired, note: joined(accessTokenRenewed(attempt), "FCM answered \(refusal.text): the \(address.name) is retired; nothing more goes to it")),
            .nextInOrder,
        ]
    }

    private func accessTokenRenewed(_ attempt: Attempt) -> String? {
        attempt.providerTokenRefreshed ? "a new access token was fetched after FCM refused the old one" : nil
    }
}
