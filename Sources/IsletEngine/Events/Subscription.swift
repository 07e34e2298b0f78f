import DequeModule
import Foundation
import IsletCore
import Synchronization

/// One subscriber's queue of events: bounded, and coalescing so a slow reader skips content it
/// would overwrite anyway instead of slowing anyone down.
///
/// The event bus offers every matching event without ever waiting. When coalescing is on, a
/// newer `contentUpdated` for an activity replaces the older one still queued (the newer one
/// takes its place at the end of the queue, so ids stay increasing). When the queue still
/// reaches its capacity, the subscription finishes with `.overflow` and the subscriber resumes
/// from its last event id, from the store.
public final class Subscription: Sendable {
    /// What a reader gets when it asks for the next events.
    public enum Delivery: Sendable, Equatable {
        /// Events, oldest first.
        case events([EncodedEvent])
        /// Nothing happened for a while: a good time to send a keep-alive.
        case idle
        /// The subscription ended.
        case finished(FinishReason)
    }

    /// Why a subscription ended.
    public enum FinishReason: String, Sendable, Equatable {
        /// The reader fell so far behind that its queue filled up.
        case overflow
        /// The server is shutting down.
        case shutdown
        /// The reader went away.
        case cancelled
    }

    fileprivate struct State {
        var queue: Deque<EncodedEvent?> = []
        /// The absolute position of `queue.first`.
        var head = 0
        var queued = 0
        /// Where each activity's queued content update is, by absolute position.
        var contentPositions: [ActivityID: Int] = [:]
        var idle = false
        var finished: FinishReason?
        var waiter: Waiter?
    }

    /// Who waits for the next delivery: a task (`next()`), or a reader on an event loop that asked
    /// to be called (`poll(orWake:)`).
    fileprivate enum Waiter {
        case task(CheckedContinuation<Void, Never>)
        case call(@Sendable () -> Void)

        func wake() {
            switch self {
            case .task(let continuation): continuation.resume()
            case .call(let wake): wake()
            }
        }
    }

    /// The subscription's identity within its bus.
    public let id: UInt64
    /// Which events it receives.
    public let filter: EventFilter
    /// Whether newer content updates replace older queued ones.
    public let coalesces: Bool
    /// The most events it holds before it overflows.
    public let capacity: Int
    private let state = Mutex(State())
    private let onCoalesce: @Sendable () -> Void
    private let finishHandler = Mutex<(@Sendable (FinishReason) -> Void)?>(nil)

    init(id: UInt64, filter: EventFilter, coalesces: Bool, capacity: Int, onCoalesce: @escaping @Sendable () -> Void) {
        self.id = id
        self.filter = filter
        self.coalesces = coalesces
        self.capacity = max(1, capacity)
        self.onCoalesce = onCoalesce
    }

    /// Queues an event without waiting. Returns `false` when the subscription has just overflowed.
    @discardableResult
    func offer(_ event: EncodedEvent) -> Bool {
        var coalesced = false
        let (waiter, accepted) = state.withLock { state -> (Waiter?, Bool) in
            guard state.finished == nil else { return (nil, true) }
            let replaces = coalesces && event.type.isSupersededByNewer
            if replaces, let activityId = event.activityId,
                let position = state.contentPositions.removeValue(forKey: activityId)
            {
                state.queue[position - state.head] = nil
                state.queued -= 1
                coalesced = true
                state.compactIfSparse()
            }
            if state.queued >= capacity {
                state.finished = .overflow
                state.queue.removeAll()
                state.contentPositions.removeAll()
                state.queued = 0
                return (state.takeWaiter(), false)
            }
            state.queue.append(event)
            state.queued += 1
            if replaces, let activityId = event.activityId {
                state.contentPositions[activityId] = state.head + state.queue.count - 1
            }
            return (state.takeWaiter(), true)
        }
        if coalesced { onCoalesce() }
        waiter?.wake()
        if !accepted { notifyFinished(.overflow) }
        return accepted
    }

    /// Asks the reader to send a keep-alive if it has nothing else to send.
    func markIdle() {
        let waiter = state.withLock { state -> Waiter? in
            state.idle = true
            return state.takeWaiter()
        }
        waiter?.wake()
    }

    /// Ends the subscription; the reader gets what is queued, then `.finished(reason)`.
    public func finish(_ reason: FinishReason) {
        let (waiter, finishedNow) = state.withLock { state -> (Waiter?, Bool) in
            let finishedNow = state.finished == nil
            if finishedNow { state.finished = reason }
            return (state.takeWaiter(), finishedNow)
        }
        waiter?.wake()
        if finishedNow { notifyFinished(reason) }
    }

    /// Calls `handler` once when the subscription finishes (at once if it already has), so a
    /// transport can act on it even while its reader is blocked writing.
    public func onFinish(_ handler: @escaping @Sendable (FinishReason) -> Void) {
        let finished = state.withLock { $0.finished }
        if let finished {
            return handler(finished)
        }
        finishHandler.withLock { $0 = handler }
        // It may have finished in between; the handler runs at most once either way.
        if let finished = state.withLock({ $0.finished }) {
            notifyFinished(finished)
        }
    }

    private func notifyFinished(_ reason: FinishReason) {
        finishHandler.withLock { handler in
            defer { handler = nil }
            return handler
        }?(reason)
    }

    /// The number of events waiting to be read.
    public var queuedCount: Int { state.withLock { $0.queued } }

    /// The number of queue slots held, replaced ones included: what the queue costs in memory.
    var slotCount: Int { state.withLock { $0.queue.count } }

    /// Waits for the next events, a keep-alive moment or the end. Cancelling the waiting task
    /// finishes the subscription with `.cancelled`.
    public func next() async -> Delivery {
        while true {
            if let delivery = state.withLock({ $0.take() }) {
                return delivery
            }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let ready = state.withLock { state -> Bool in
                        if Task.isCancelled, state.finished == nil { state.finished = .cancelled }
                        if state.queued > 0 || state.idle || state.finished != nil { return true }
                        state.waiter = .task(continuation)
                        return false
                    }
                    if ready { continuation.resume() }
                }
            } onCancel: {
                finish(.cancelled)
            }
        }
    }

    /// The next events, keep-alive moment or end if there is one; otherwise `nil`, and `wake` is
    /// called once when there is. For a reader that runs on an event loop instead of in a task:
    /// it polls when woken (and when its connection can take more), so a subscriber costs no
    /// task, and one that cannot keep up leaves its events here, coalescing.
    public func poll(orWake wake: @escaping @Sendable () -> Void) -> Delivery? {
        state.withLock { state in
            if let delivery = state.take() { return delivery }
            state.waiter = .call(wake)
            return nil
        }
    }
}

extension Subscription.State {
    /// Drops the slots of replaced events once they outnumber the live ones, so a reader that
    /// never reads costs at most twice its live events, however many updates are coalesced.
    mutating func compactIfSparse() {
        guard queue.count > 2 * queued + 32 else { return }
        let live = queue.compactMap { $0 }
        head += queue.count - live.count
        queue = Deque(live.map(Optional.some))
        contentPositions.removeAll(keepingCapacity: true)
        for (offset, event) in live.enumerated() where event.type.isSupersededByNewer {
            if let activityId = event.activityId {
                contentPositions[activityId] = head + offset
            }
        }
    }

    mutating func takeWaiter() -> Subscription.Waiter? {
        defer { waiter = nil }
        return waiter
    }

    /// Takes everything queued, or the keep-alive or end signal, if there is one.
    mutating func take() -> Subscription.Delivery? {
        if queued > 0 {
            let events = queue.compactMap { $0 }
            head += queue.count
            queue.removeAll(keepingCapacity: true)
            contentPositions.removeAll(keepingCapacity: true)
            queued = 0
            idle = false
            return .events(events)
        }
        if let finished { return .finished(finished) }
        if idle {
            idle = false
            return .idle
        }
        return nil
    }
}
