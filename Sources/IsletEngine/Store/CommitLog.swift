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
    /// Apps and devices whose key was replaced: their old keys stop working.
    public var keysReplaced: Set<KeyOwner> = []
    /// Deliveries were written or may go now: the delivery sender looks again.
    public var deliveriesReady = false
    /// What Apple answered the delivery requests made (for metrics).
    public var deliveryAnswers: [DeliveryAnswer] = []
    /// Rounds of the delivery sender (answers written down, deliveries claimed): one store
    /// transaction each, however many deliveries it carries.
    public var deliveryRounds = 0

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
        keysReplaced.formUnion(other.keysReplaced)
        deliveriesReady = deliveriesReady || other.deliveriesReady
        deliveryAnswers += other.deliveryAnswers
        deliveryRounds += other.deliveryRounds
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

/// What Apple (or FCM) answered one delivery request: the status (`nil`: no answer), the reason,
/// how long the request took, and, for a delivery it took, how long since the change that wrote it
/// was committed.
public struct DeliveryAnswer: Sendable, Hashable {
    public var status: Int?
    public var reason: String?
    public var latency: Duration
    /// From the commit of the change to this answer, when the answer delivered it.
    public var sinceChange: Duration?

    public init(status: Int?, reason: String?, latency: Duration, sinceChange: Duration? = nil) {
        self.status = status
        self.reason = reason
        self.latency = latency
        self.sinceChange = sinceChange
    }
}

/// Committed transactions, in commit order: the store's writer appends each as it commits,
/// without waiting, and the log hands them one by one, in that order, to its reader (the
/// engine's `FanOut`) on a serial queue of its own. The writer therefore never pays for
/// subscribers; nor does Swift's cooperative pool, whose threads the readers of thousands of
/// streams need while an event is offered to them.
public final class CommitLog: Sendable {
    private struct State {
        var next: UInt64 = 1
        var reader: (@Sendable (Commit) -> Void)?
        var pending: [Commit] = []
    }

    private let state = Mutex(State())
    private let queue = DispatchQueue(label: "islet.commits")

    /// An empty log.
    public init() {}

    /// Appends a committed transaction and returns its number. Never waits.
    ///
    /// - Parameter published: Called with the commit's number once the reader has taken the
    ///   commit (the fan-out has published it), on the log's queue: how a store answers its
    ///   callers without a second hand-off. With no reader yet, at once.
    @discardableResult
    public func append(_ commit: Commit, then published: (@Sendable (UInt64) -> Void)? = nil) -> UInt64 {
        var commit = commit
        let (number, unread) = state.withLock { state -> (UInt64, Bool) in
            commit.number = state.next
            state.next += 1
            // Dispatched under the lock: the queue receives commits in number order.
            guard let reader = state.reader else {
                state.pending.append(commit)
                return (commit.number, true)
            }
            let commit = commit
            queue.async {
                reader(commit)
                published?(commit.number)
            }
            return (commit.number, false)
        }
        if unread { published?(number) }
        return number
    }

    /// Hands every commit, from the first not yet read, to `reader`, in order, on the log's queue.
    func read(with reader: @escaping @Sendable (Commit) -> Void) {
        state.withLock { state in
            state.reader = reader
            let pending = state.pending
            state.pending = []
            queue.async { for commit in pending { reader(commit) } }
        }
    }

    /// Returns once every commit appended so far has been handed to the reader.
    func drain() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async { continuation.resume() }
        }
    }
}
