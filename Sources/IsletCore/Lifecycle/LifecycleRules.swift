import Foundation

/// The limits ActivityKit applies to Live Activities; each is a server setting.
///
/// Every default is Apple's documented value. Where Apple documents no number (the concurrency
/// limits) the default is the figure commonly observed on devices, and the docs say so.
public struct LifecycleRules: Hashable, Sendable {
    /// How long an activity stays active before the system ends it. Apple: 8 hours.
    public var maxActiveDuration: TimeInterval = 8 * 3600
    /// How long an ended activity stays on the Lock Screen at most. Apple: 4 hours.
    public var dismissalWindow: TimeInterval = 4 * 3600
    /// How long an activity is shown in all, from its start to its dismissal. Apple: 12 hours.
    public var maxLifetime: TimeInterval = 12 * 3600
    /// The largest combined size of attributes and content state, in encoded bytes. Apple: 4 KB.
    public var maxPayloadSize: Int = 4096
    /// The most live activities one app may have on one device (`targetMaximumExceeded`).
    public var maxActivitiesPerApp: Int = 5
    /// The most live activities one device may hold (`globalMaximumExceeded`).
    public var maxActivitiesPerDevice: Int = 10
    /// How far in the future an update's timestamp may be before it is ignored.
    public var maxTimestampLead: TimeInterval = 8 * 3600
    /// How far ahead an activity may be scheduled to start (`startTooFarAhead` beyond). Apple
    /// documents no limit; a week covers tomorrow's match and next week's flight.
    public var maxScheduleLead: TimeInterval = 7 * 86_400
    /// Priority-10 push updates an activity may receive per hour before the device throttles
    /// them. Apple documents no number; this is the order of magnitude developers observe.
    public var pushBudgetPerHour: Int = 12
    /// The same budget when the device allows the app frequent updates.
    public var frequentPushBudgetPerHour: Int = 60
    /// How long before its automatic end a renewing activity is renewed (docs/renewal.md); at
    /// most half of `maxActiveDuration`, so a successor lives before it is renewed in turn.
    public var renewalLead: TimeInterval = 30 * 60

    /// Rules with every limit at its default.
    public init() {}

    /// The hourly budget a push counts against, or `nil` when it does not count: priority-5
    /// pushes are delivered opportunistically and never spend budget.
    public func pushBudget(priority: Int, frequentUpdates: Bool) -> Int? {
        guard priority >= 10 else { return nil }
        return frequentUpdates ? frequentPushBudgetPerHour : pushBudgetPerHour
    }

    /// When an activity that became active at `start` is renewed, if it is: its automatic end
    /// less the renewal lead, unless the chain's `until` comes before that end.
    public func renewal(startedAt start: Date, until: Date?) -> Date? {
        let autoEnd = start.addingTimeInterval(maxActiveDuration)
        if let until, until <= autoEnd { return nil }
        return autoEnd.addingTimeInterval(-min(renewalLead, maxActiveDuration / 2))
    }

    /// Refuses attributes and a content state whose combined encoding exceeds the limit.
    public func checkPayloadSize(attributes: JSONValue, state: JSONValue) throws(IsletError) {
        let size = WireFormat.encodedSize(attributes) + WireFormat.encodedSize(state)
        guard size <= maxPayloadSize else {
            throw IsletError(
                .attributesTooLarge,
                "Attributes and content state take \(size) bytes encoded; the limit is \(maxPayloadSize)."
            )
        }
    }

    /// When an activity ended at `endedAt` with `policy` leaves the Lock Screen: never later than
    /// the dismissal window after its end, nor than the maximum lifetime after its start.
    public func dismissalDate(endedAt: Date, startedAt: Date?, policy: DismissalPolicy) -> Date {
        let windowEnd = endedAt.addingTimeInterval(dismissalWindow)
        var date: Date
        switch policy {
        case .default: date = windowEnd
        case .immediate: date = endedAt
        case .after(let requested): date = min(max(requested, endedAt), windowEnd)
        }
        if let startedAt {
            date = min(date, max(endedAt, startedAt.addingTimeInterval(maxLifetime)))
        }
        return date
    }
}
