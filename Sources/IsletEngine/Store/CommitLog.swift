import DequeModule
import Foundation
import IsletCore
import Synchronization

/// What one committed transaction did, for the engine to publish: built by the store as the
/// transaction runs (`save` notes deadlines, `append` numbers events, use cases add effects),
/// never by callers, so no path can forget to tell the bus, the metrics or the scheduler.
public struct Commit: Sendable {
    /// The commit's place in `CommitLog` order, from 1.
    public var number: UInt64 = 0
    /// The events, ids increasing; a later commit's ids are larger.
    public var events: [EncodedEvent]
    /// The earliest next deadline among the activities saved.
    public var earliestDeadline: Date?
    /// What the savepoints that held did besides their events.
    public var effects: Effects

    /// Creates a commit (the log numbers it).
    public init(events: [EncodedEvent] = [], earliestDeadline: Date? = nil, effects: Effects = Effects()) {
        self.events = events
        self.earliestDeadline = earliestDeadline
        self.effects = effects
    }

    /// Adds what one more savepoint did.
    public mutating func add(events: [EncodedEvent], deadline: Date?, effects: Effects) {
        self.events += events
        if let deadline { earliestDeadline = min(earliestDeadline ?? deadline, deadline) }
        self.effects.add(effects)
    }
}

/// What a use case did besides recording events: counts for metrics, and changes that caches
/// must hear of. Part of a commit, so it counts only if the change committed.
public struct Effects: Sendable, Hashable {
    /// Content updates applied.
    public var updatesApplied = 0
    /// Inputs the rules ignored, by reason.
    public var updatesIgnored: [IgnoreReason: Int] = [:]
    /// APNs-format pushes a device took.
    public var pushesDelivered = 0
    /// APNs-format pushes a device dropped, by reason.
    public var pushesDropped: [IgnoreReason: Int] = [:]
    /// Activities changed by their deadlines.
    public var deadlinesFired = 0
    /// Provider keys were added or removed: cached verifications must be forgotten.
    public var providerKeysChanged = false
    /// Devices whose display key was replaced: their old keys stop working.
    public var deviceKeysReplaced: Set<DeviceID> = []

    /// No effects.
    public init() {}

    /// Adds another set of effects to these.
    public mutating func add(_ other: Effects) {
        updatesApplied += other.updatesApplied
        updatesIgnored.merge(other.updatesIgnored, uniquingKeysWith: +)
        pushesDelivered += other.pushesDelivered
        pushesDropped.merge(other.pushesDropped, uniquingKeysWith: +)
        deadlinesFired += other.deadlinesFired
        providerKeysChanged = providerKeysChanged || other.providerKeysChanged
        deviceKeysReplaced.formUnion(other.deviceKeysReplaced)
    }

    /// Counts what a step of the rules did: content applied, or an input ignored.
    public mutating func count(_ transition: Transition) {
        for payload in transition.payloads {
            switch payload {
            case .contentUpdated: updatesApplied += 1
            case .updateIgnored(let ignored): updatesIgnored[ignored.reason, default: 0] += 1
            default: break
            }
        }
    }

    /// Counts a push a device took (`ignored == nil`) or dropped.
    public mutating func countPush(ignored: IgnoreReason?) {
        if let ignored {
            pushesDropped[ignored, default: 0] += 1
        } else {
            pushesDelivered += 1
        }
    }
}

/// Committed transactions, in commit order: the store's writer appends each as it commits,
/// without waiting, and the engine's `FanOut` takes them one by one. The writer therefore never
/// pays for subscribers, and they still see events in commit order.
public final class CommitLog: Sendable {
    private struct State {
        var pending: Deque<Commit> = []
        var next: UInt64 = 1
        var reader: CheckedContinuation<Commit?, Never>?
        var closed = false
    }

    private let state = Mutex(State())

    /// An empty log.
    public init() {}

    /// Appends a committed transaction and returns its number. Never waits.
    @discardableResult
    public func append(_ commit: Commit) -> UInt64 {
        var commit = commit
        let (number, reader) = state.withLock { state -> (UInt64, CheckedContinuation<Commit?, Never>?) in
            commit.number = state.next
            state.next += 1
            if let reader = state.reader {
                state.reader = nil
                return (commit.number, reader)
            }
            state.pending.append(commit)
            return (commit.number, nil)
        }
        reader?.resume(returning: commit)
        return number
    }

    /// The next commit, waiting for one; `nil` once the log is closed and drained.
    func next() async -> Commit? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Commit?, Never>) in
            let ready = state.withLock { state -> Commit?? in
                if let commit = state.pending.popFirst() { return .some(commit) }
                if state.closed { return .some(nil) }
                state.reader = continuation
                return .none
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// Stops the reader once it has taken what is pending.
    func close() {
        let reader = state.withLock { state -> CheckedContinuation<Commit?, Never>? in
            state.closed = true
            guard state.pending.isEmpty else { return nil }
            defer { state.reader = nil }
            return state.reader
        }
        reader?.resume(returning: nil)
    }
}
