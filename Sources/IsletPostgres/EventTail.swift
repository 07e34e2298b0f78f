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
/// most that, and loses none.
///
/// Ids are drawn without taking turns (`PostgresWriter.insertEvents`), so they may become
/// visible out of order. The tail publishes only the ids that follow the last it published; an
/// id missing before later ones (a gap) is a transaction still committing — whose notification
/// wakes the tail — or one that rolled back. A gap that lasts `gapPatience` is settled by taking
/// the events lock exclusively for a moment: every transaction that drew an id up to the last
/// one seen has then ended, and what is still missing never comes. What the tail published is
/// also how far a read of events goes (`position`, the store's reads).
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
    /// How long a gap may last before the tail settles it (a commit takes milliseconds).
    static let gapPatience: Duration = .milliseconds(50)

    /// Every event up to this id has been published: reads of events go no further.
    var position: EventID { state.withLock { $0.position } }

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
        /// The first id missing before later ones, and since when.
        var gap: (first: EventID, since: ContinuousClock.Instant)?
        while !state.withLock({ $0.stopped }) {
            let position = state.withLock { state in
                state.woken = false
                return state.position
            }
            do {
                let rows = try await events(after: position, store: store)
                // The ids that follow the last published, one by one: published now.
                var through = position
                var run: [EncodedEvent] = []
                for row in rows {
                    guard row.id == through + 1 else { break }
                    through = row.id
                    if let event = row.event { run.append(event) }
                }
                if through > position { append(run, through: through) }
                guard let seen = rows.last?.id, seen > through else {
                    gap = nil
                    if rows.count < Self.page { await sleep() }
                    continue
                }
                if let open = gap, open.first == through + 1, ContinuousClock.now - open.since >= Self.gapPatience {
                    try await settle(through: seen, store: store)
                    gap = nil
                    continue
                }
                if gap?.first != through + 1 { gap = (through + 1, .now) }
                // Its commit's notification wakes the tail; a rollback sends none.
                await sleep(upTo: Self.gapPatience)
            } catch {
                logger.warning("Reading events from PostgreSQL failed; trying again", metadata: ["error": "\(error)"])
                try? await Task.sleep(for: .milliseconds(200))
            }
        }
    }

    /// The events after `id`, in id order, at most `page`; `nil` for a type this version does
    /// not know (passed over, not published).
    private func events(after id: EventID, store: PostgresStore) async throws -> [(id: EventID, event: EncodedEvent?)] {
        let rows = try await store.withConnection { connection in
            try await connection.run("SELECT * FROM event WHERE id > \(id) ORDER BY id LIMIT \(Self.page)", logger: store.logger).get().rows
        }
        return try rows.map { row in
            let columns = PostgresRow.Columns(row)
            return (try columns["id"], try SQLRows.event(columns))
        }
    }

    /// Publishes every event up to `seen`, passing over the ids still missing: once the events
    /// lock is had exclusively, every transaction that drew an id up to `seen` (they hold it
    /// shared from their draw to their end) has ended, so a missing id was rolled back.
    private func settle(through seen: EventID, store: PostgresStore) async throws {
        try await store.withConnection { connection in
            // A statement of its own is a transaction of its own: the lock ends with it.
            _ = try await connection.run("SELECT pg_advisory_xact_lock(\(PostgresWriter.eventsLock))", logger: store.logger).get()
        }
        let position = state.withLock { $0.position }
        let rows = try await events(after: position, store: store).filter { $0.id <= seen }
        append(rows.compactMap(\.event), through: seen)
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

    /// Sleeps until woken, or `limit` passed.
    private func sleep(upTo limit: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                try? await Task.sleep(for: limit)
                self.wake()
            }
            await self.sleep()
            group.cancelAll()
        }
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
