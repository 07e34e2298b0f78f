import Foundation

/// A Live Activity push's payload, read as a device reads it: the `aps` dictionary's `event`,
/// `content-state`, `timestamp`, `stale-date`, `relevance-score`, `dismissal-date`, `alert`,
/// and for a push-to-start `attributes-type`, `attributes`, `input-push-token` and
/// `input-push-channel`.
///
/// IsletAPNs parses it from a push's body (`LiveActivityPayload.parse`), which splits two kinds
/// of trouble. A body that is not JSON with an `aps` dictionary is refused by APNs itself. A
/// payload APNs accepts but a device cannot use — no `event`, an update without
/// `content-state`, a start without `alert` — parses into `.undeliverable`: the device drops
/// it, and Islet records why.
public struct LiveActivityPayload: Hashable, Sendable {
    /// What the payload asks for.
    public enum Action: Hashable, Sendable {
        /// `event: update`.
        case update(ContentUpdate)
        /// `event: end`.
        case end(EndRequest)
        /// `event: start`, sent to a push-to-start token.
        case start(PushStart)
        /// A payload a device cannot use, and why.
        case undeliverable(reason: IgnoreReason, detail: String)
    }

    /// What the payload asks for.
    public var action: Action
    /// `aps.timestamp`, if any.
    public var timestamp: Date?
    /// `aps.event` as sent, when it is one of `start`, `update` and `end`.
    public var event: String?

    /// The name a dropped push is recorded under (`updateIgnored`'s `action`): its event, or
    /// `push` when it had no usable one.
    public var actionName: String { event ?? "push" }

    /// Creates a payload as parsed.
    public init(action: Action, timestamp: Date?, event: String?) {
        self.action = action
        self.timestamp = timestamp
        self.event = event
    }

    /// Whether the payload starts an activity.
    public var isStart: Bool {
        if case .start = action { return true }
        return false
    }
}
