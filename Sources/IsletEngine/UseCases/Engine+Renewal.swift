import Foundation
import IsletCore

/// Activities that outlast `maxActiveDuration` (docs/renewal.md): a renewing activity is
/// replaced, `lifecycle.renewalLead` before its automatic end, by a successor with the same app,
/// type, attributes, device and key and its latest content, in one transaction — so a display
/// shows one card throughout, and an id of the chain stands for its live end.
extension Engine {
    /// Renews an activity whose renewal came (the deadline scheduler's turn): starts its
    /// successor and ends it at once. A successor the rules refuse (Live Activities turned off,
    /// the device full) is not started: the activity runs on to its automatic end, and its
    /// delivery log says why, rather than the deadline failing again forever.
    /// - Returns: Whether it was renewed.
    @discardableResult
    func renew(_ id: ActivityID) async throws -> Bool {
        let rules = self.rules
        do {
            return try await write(about: id) { tx in
                var activity = try tx.loadActivity(id, owner: nil)
                guard activity.state.isLive, let renewAt = activity.renewAt, renewAt <= tx.now else { return false }
                let request = activity.successorRequest
                let context = try StartContext.read(bundleId: activity.bundleId, attributesType: activity.attributesType, in: tx)
                let successor = try Self.start(request, bundleId: activity.bundleId, key: activity.key, rules: rules, in: tx, renewing: activity, context: context)
                try tx.deliverStart(of: successor.activity, alert: nil, context: context)
                let (transition, _) = try tx.change(&activity, .renewed(by: successor.activity.id), rules: rules)
                if try tx.phoneActivity(successor.activity.id) != nil {
                    // On a phone the old card leaves once the successor shows (`Engine.resolve`):
                    // its end goes after the successor's start, in the successor's order.
                    try tx.deliverChange(
                        .end(EndRequest(dismissalPolicy: .immediate)), transition: transition, of: activity,
                        after: successor.activity.id
                    )
                } else if try tx.phoneActivity(activity.id) != nil {
                    try tx.report(
                        renewalNote: "renewed as \(successor.activity.id) here, but not on the phone, which could not be sent its start: the phone keeps this card until its own end",
                        of: activity, failed: true
                    )
                }
                if successor.activity.renewAt == nil, let until = successor.activity.renewUntil {
                    try tx.report(renewalNote: "the last renewal: renewUntil (\(ISO8601DateFormatter().string(from: until))) comes before this one's end", of: successor.activity)
                }
                // The chain's earlier links are kept as long as it lives: retention counts from
                // their last write, and an id of the chain must keep leading to its live end.
                var link = activity
                while let earlier = link.renewedFrom, let found = try tx.activity(earlier) {
                    try tx.keep(found)
                    link = found
                }
                return true
            }
        } catch let error where !Self.isOutage(error) {
            // A renewal that fails for this activity's own sake (the rules refuse its successor,
            // a row that cannot be read) is not tried again: it runs to its end, and says why.
            let why = (error as? IsletError)?.message ?? "\(error)"
            try await write(about: id) { tx in
                var activity = try tx.loadActivity(id, owner: nil)
                guard activity.renewAt != nil else { return }
                activity.renewAt = nil
                try tx.keep(activity)
                try tx.report(renewalNote: "not renewed: \(why) It ends at its automatic end.", of: activity, failed: true)
            }
            return false
        }
    }

    /// Whether an error says the store (or the process) cannot work now, rather than that this
    /// one change cannot be made: the work is tried again later.
    static func isOutage(_ error: any Error) -> Bool {
        if error is CancellationError { return true }
        return (error as? IsletError)?.reason == .unavailable
    }
}

extension Activity {
    /// What starts this activity's successor: the same app's type, attributes, device, style and
    /// push type, its latest content, still renewing until the same date.
    public var successorRequest: ActivityRequest {
        ActivityRequest(
            attributesType: attributesType, attributes: attributes, content: content, pushType: pushType, style: style,
            deviceId: deviceId, renew: true, renewUntil: renewUntil
        )
    }
}

extension StoreReading {
    /// Why a renewing activity cannot be renewed on its phone, if it cannot: on a real iPhone
    /// (the app delivers, and the phone holds the app's tokens) the successor needs a
    /// push-to-start token for the type. An Android phone needs none.
    func renewalBlocker(of activity: Activity) throws -> String? {
        guard activity.renew == true, try fcmCredential(bundleId: activity.bundleId) == nil,
            try !deliveryCredentials(bundleId: activity.bundleId).isEmpty,
            try phoneTokens(deviceId: activity.deviceId).contains(where: { $0.bundleId == activity.bundleId }),
            try pushToStartToken(deviceId: activity.deviceId, bundleId: activity.bundleId, attributesType: activity.attributesType) == nil
        else { return nil }
        return "\(activity.deviceId) has no push-to-start token for \(activity.attributesType) (the app registers one with pushToStartTokenUpdates)"
    }
}

extension Transaction {
    /// Why a renewing activity on a real iPhone cannot be renewed there, if it cannot: said in
    /// the answer to the start and in the activity's delivery log, hours before the renewal.
    func renewalWarnings(of activity: Activity) throws -> [String] {
        guard let blocker = try renewalBlocker(of: activity) else { return [] }
        let left = activity.autoEndAt.map { " (in \(DurationText.text($0.timeIntervalSince(now))))" } ?? ""
        let warning = "\(activity.id) cannot be renewed on the phone: \(blocker); Islet renews it, but the phone ends its card at its automatic end\(left)."
        try report(renewalNote: warning, of: activity, failed: true)
        return [warning]
    }

    /// A line of an activity's delivery log about its renewal (event `renew`, no outbox row).
    func report(renewalNote note: String, of activity: Activity, failed: Bool = false) throws {
        try report(DeliveryReport(delivery: 0, event: "renew", outcome: failed ? .held : .queued, note: note), of: activity)
    }
}
