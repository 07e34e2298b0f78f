/// An activity's place in its lifecycle, as ActivityKit's `ActivityState`.
///
/// `pending` (scheduled start) → `active` ⇄ `stale` → `ended` → `dismissed`.
public enum ActivityState: String, Codable, Sendable, CaseIterable, Comparable {
    /// Requested with a future start date; counts toward the concurrency limits.
    case pending
    /// Visible and receiving updates.
    case active
    /// Its content's stale date has passed; an update with fresh content makes it active again.
    case stale
    /// Ended by the app or the system; still on the Lock Screen until it is dismissed.
    case ended
    /// Gone from every presentation. Final.
    case dismissed

    /// Whether the activity is still running: it counts toward limits and accepts updates.
    public var isLive: Bool {
        switch self {
        case .pending, .active, .stale: true
        case .ended, .dismissed: false
        }
    }

    public static func < (lhs: ActivityState, rhs: ActivityState) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}
