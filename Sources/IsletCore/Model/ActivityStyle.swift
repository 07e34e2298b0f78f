/// How an activity presents itself, as ActivityKit's `ActivityStyle` (iOS 18).
public enum ActivityStyle: String, Codable, Hashable, Sendable {
    /// On the Lock Screen and in the Dynamic Island.
    case standard
    /// Only in the expanded Dynamic Island; displays end it when the device locks.
    case transient
}
