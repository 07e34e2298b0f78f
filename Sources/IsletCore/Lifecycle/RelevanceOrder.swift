import Foundation

extension Activity {
    /// Orders activities as a device shows them: the highest relevance score first; equal scores
    /// go to the earliest started (the earliest requested, for those not started yet).
    ///
    /// The first activity leads the Dynamic Island; the order is the Lock Screen's order.
    public static func relevanceOrder(_ lhs: Activity, _ rhs: Activity) -> Bool {
        if lhs.content.relevanceScore != rhs.content.relevanceScore {
            return lhs.content.relevanceScore > rhs.content.relevanceScore
        }
        let lhsStart = lhs.startedAt ?? lhs.scheduledStart ?? lhs.createdAt
        let rhsStart = rhs.startedAt ?? rhs.scheduledStart ?? rhs.createdAt
        if lhsStart != rhsStart {
            return lhsStart < rhsStart
        }
        return lhs.id < rhs.id
    }
}

extension Sequence<Activity> {
    /// The activities in the order a device shows them (see `Activity.relevanceOrder`).
    public func sortedByRelevance() -> [Activity] {
        sorted(by: Activity.relevanceOrder)
    }
}
