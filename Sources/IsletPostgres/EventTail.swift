import Foundation
import IsletCore
import IsletEngine
import IsletSQL
import Logging
import PostgresNIO
import Synchronization

/// Brings every node's committed events to this node's engine, in id order: it reads the events
/// after the last it read and appends them to the commit log, which the engine publishes.
///
/// A local commit's events are not read back: the commit hands them over
/// (`published(_:)`), and they are appended as soon as they follow the last event appended —
/// at once, when no other node's events or another lane's come between. Otherwise the reader
/// reads: it reads when woken — by a local commit whose events wait for others before them,
/// by PostgreSQL's NOTIFY from another node's commit (`listen`), or by a timer every
/// `pollInterval`, so a missed notification (a listener reconnecting, say) delays events by at
/// most that, and loses none. Ids become visible in increasing order (`PostgresWriter`), so
/// reading "after the last id read" never passes over one that commits later.
final class EventTail: Sendable {
    private struct State {
        var position: EventID = 0
        var waiters: [Waiter] = []
        var wake: CheckedContinuation<Void, Never>?
        var woken = false
        var stopped = false
    }

    /// A local commit waiting for its events to be published.
    private struct Waiter {
        let id: EventID
        /// Its events, to append once they follow the last appended (empty: they are read).
        var events: [EncodedEvent]
        let since: ContinuousClock.Instant
        let continuation: CheckedContinuation<Bool, Never>
    }

    /// The longest an event from another node waits when no notification comes.
    static let pollInterval: Duration = .seconds(1)
    /// The longest a local commit waits for the tail to read its events (give or take
    /// `pollInterval`): the tail cannot read while the database is gone, and a change already
    /// committed is answered rather than held through the outage — its events reach the
    /// streams when the tail reads again.
    static let publicationWait: Duration = .seconds(2)
    /// Events read at a time.
    static let page = 1_000

    private let log: CommitLog
    private let logger: Logger
    private let state = Mutex(State())

    init(log: CommitLog, logger: Logger) {
        self.log = log
        self.logger = logger
    }

    /// Starts after `id`: events up to it were committed before this node opened the store.
    func start(after id: EventID) {
        state.withLock { $0.position = id }
    }

    /// Returns once a local commit's events, and every event before them, have been appended to
    /// the log (at once when it wrote none): true; or false once it waited `publicationWait`.
    @discardableResult
    func published(_ written: WrittenEvents) async -> Bool {
        guard written.last > 0 else { return true }
        return await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let (ready, wake) = state.withLock { state -> ([CheckedContinuation<Bool, Never>], CheckedContinuation<Void, Never>?) in
                if state.position >= written.last || state.stopped { return ([continuation], nil) }
                state.waiters.append(Waiter(id: written.last, events: written.events, since: .now, continuation: continuation))
                let ready = appendWaitingEvents(&state)
                // Events before these that this node does not have: the reader reads them.
                return (ready, state.position >= written.last ? nil : takeWake(&state))
            }
            wake?.resume()
            for continuation in ready { continuation.resume(returning: true) }
        }
    }

    /// Appends the events of local commits that follow the last appended, in id order, and
    /// takes the waiters whose events are all appended now.
    private func appendWaitingEvents(_ state: inout State) -> [CheckedContinuation<Bool, Never>] {
        while let index = state.waiters.firstIndex(where: { $0.events.first?.id == state.position + 1 }) {
            let events = state.waiters[index].events
            log.append(Commit(events: events))
            state.position = events[events.count - 1].id
        }
        var ready: [CheckedContinuation<Bool, Never>] = []
        state.waiters.removeAll { waiter in
            guard waiter.id <= state.position else { return false }
            ready.append(waiter.continuation)
            return true
        }
        return ready
    }

    /// Lets go of the local commits that waited `publicationWait` for their events.
    private func expireWaiters() {
        let expired = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            let now = ContinuousClock.now
            var expired: [CheckedContinuation<Bool, Never>] = []
            state.waiters.removeAll { waiter in
                guard now - waiter.since >= Self.publicationWait else { return false }
                expired.append(waiter.continuation)
                return true
            }
            return expired
        }
        if !expired.isEmpty {
            logger.warning("Committed changes answered before their events could be read; they reach the streams when the database answers again", metadata: ["changes": "\(expired.count)"])
        }
        for continuation in expired { continuation.resume(returning: false) }
    }

    /// Wakes the reader (a notification came, or a listener reconnected).
    func wake() {
        let wake = state.withLock { takeWake(&$0) }
        wake?.resume()
    }

    /// Stops reading; waiters return.
    func stop() {
        let (waiters, wake) = state.withLock { state in
            state.stopped = true
            defer { state.waiters = [] }
            return (state.waiters.map(\.continuation), takeWake(&state))
        }
        wake?.resume()
        for waiter in waiters { waiter.resume(returning: true) }
    }

    private func takeWake(_ state: inout State) -> CheckedContinuation<Void, Never>? {
        state.woken = true
        defer { state.wake = nil }
        return state.wake
    }

    /// Reads until `stop()`, listening for other nodes' commits meanwhile.
    func run(store: PostgresStore) async {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.listen(store: store) }
            group.addTask { await self.tick() }
            await self.read(store: store)
            group.cancelAll()
        }
    }

    private func read(store: PostgresStore) async {
        while !state.withLock({ $0.stopped }) {
            let position = state.withLock { state in
                state.woken = false
                return state.position
            }
            var full = false
            do {
                let rows = try await store.withConnection { connection in
                    try await connection.run(
                        "SELECT * FROM event WHERE id > \(position) ORDER BY id LIMIT \(Self.page)", logger: store.logger
                    ).get().rows
                }
                full = rows.count == Self.page
                if let last = rows.last {
                    // An event of a type this version does not know is passed over, not published.
                    append(try rows.compactMap { row in try SQLRows.event(PostgresRow.Columns(row)) }, through: try PostgresRow.Columns(last)["id"])
                }
            } catch {
                logger.warning("Reading events from PostgreSQL failed; trying again", metadata: ["error": "\(error)"])
                try? await Task.sleep(for: .milliseconds(200))
                continue
            }
            if !full { await sleep() }
        }
    }

    /// Appends events read, through `id`: those a local commit appended meanwhile are left out.
    private func append(_ events: [EncodedEvent], through id: EventID) {
        let ready = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            let new = events.drop { $0.id <= state.position }
            if !new.isEmpty { log.append(Commit(events: Array(new))) }
            state.position = max(state.position, id)
            return appendWaitingEvents(&state)
        }
        for continuation in ready { continuation.resume(returning: true) }
    }

    private func sleep() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if state.woken || state.stopped || !state.waiters.isEmpty { return true }
                state.wake = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Wakes the reader every `pollInterval` — the fallback for a notification missed — and
    /// lets go of commits that waited too long.
    private func tick() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: Self.pollInterval)
            expireWaiters()
            wake()
        }
    }

    /// LISTENs for other nodes' commits on a connection of its own, reconnecting after a
    /// failure; a (re)connection wakes the reader, in case a notification was missed meanwhile.
    private func listen(store: PostgresStore) async {
        while !Task.isCancelled {
            do {
                try await store.client.withConnection { connection in
                    // A waiting notification sequence does not end when its task is cancelled:
                    // closing the connection ends it, and the pool makes another.
                    try await withTaskCancellationHandler {
                        try await connection.listen(on: PostgresWriter.channel) { notifications in
                            self.wake()
                            for try await notification in notifications {
                                // This node's own commits, mostly: their events are appended already.
                                if let id = EventID(notification.payload), self.state.withLock({ $0.position >= id }) { continue }
                                self.wake()
                            }
                        }
                    } onCancel: {
                        _ = connection.close() as EventLoopFuture<Void>
                    }
                }
            } catch {
                if Task.isCancelled { return }
                logger.debug("Listening for events failed; listening again", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: .seconds(1))
        }
    }
}
