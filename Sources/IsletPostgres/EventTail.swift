import Foundation
import IsletCore
import IsletEngine
import IsletSQL
import Logging
import PostgresNIO
import Synchronization

/// Brings every node's committed events to this node's engine, in id order, and appends them
/// to the commit log, which the engine publishes.
///
/// Events mostly come without a read: a local commit hands its events over (`published(_:)`),
/// and another node's commit's notification carries them (`EventNotice`, `noticed(_:)`). They
/// are kept as *known* until they follow the last event appended, then appended — at once,
/// when nothing comes between. The reader reads the events after the last appended when told
/// to: by a notification without its events (they did not fit, or the node that sent it is of
/// an earlier version), by a listener (re)connecting, by a timer every `pollInterval` — so a
/// missed notification delays events by at most that, and loses none — or when known events
/// have waited `readPatience` for ones before them.
///
/// Ids are drawn without taking turns (`PostgresWriter.insertEvents`), so they may become
/// visible out of order. The tail publishes only the ids that follow the last it published; an
/// id missing before later ones (a gap) is a transaction still committing — whose notification
/// fills it — or one that rolled back. A gap the reader sees last `gapPatience` is settled by
/// taking the events lock exclusively for a moment: every transaction that drew an id up to
/// the last one seen has then ended, and what is still missing never comes. What the tail
/// published is also how far a read of events goes (`position`, the store's reads).
final class EventTail: Sendable {
    /// Why the tail read the events table (`islet_store_event_reads_total`'s `cause`).
    enum ReadCause: String, Sendable, CaseIterable {
        /// The node's first read, from where it started.
        case start
        /// A notification came without its events (too large, or from an earlier version).
        case notification
        /// A local commit whose events' ids were not known one by one.
        case commit
        /// Known events waited `readPatience` for the ones before them.
        case wait
        /// Ids seen after a gap: read again until it fills or is settled.
        case gap
        /// The listener (re)connected: a notification may have been missed.
        case listener
        /// The timer, every `pollInterval`: a notification may have been missed.
        case timer
        /// A read that failed, tried again.
        case retry
    }

    private struct State {
        var position: EventID = 0
        /// Events after `position` known without a read (local commits', notifications'), by id.
        var known: [EventID: EncodedEvent] = [:]
        var waiters: [Waiter] = []
        /// Since when known events or local commits wait for events before them, with no
        /// event appended meanwhile.
        var waitingSince: ContinuousClock.Instant?
        var wake: CheckedContinuation<Void, Never>?
        /// A read is asked for, and the first reason since the last read.
        var woken = false
        var cause: ReadCause = .start
        /// Something the sleeping reader looks at changed.
        var signaled = false
        var stopped = false
    }

    /// A local commit waiting for its events to be published.
    private struct Waiter {
        let id: EventID
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
    /// How long known events wait for the events before them before the tail reads (those
    /// come with their commit's notification, within milliseconds).
    static let readPatience: Duration = .milliseconds(20)
    /// How long a gap may last before the tail settles it (a commit takes milliseconds).
    static let gapPatience: Duration = .milliseconds(50)
    /// The most events kept known ahead of the last appended; past it, the reader reads them.
    static let knownLimit = 10_000

    /// Every event up to this id has been published: reads of events go no further.
    var position: EventID { state.withLock { $0.position } }

    private let log: CommitLog
    private let logger: Logger
    private let state = Mutex(State())
    private let reads = Mutex([ReadCause: Int]())

    init(log: CommitLog, logger: Logger) {
        self.log = log
        self.logger = logger
    }

    /// Reads of events the tail made so far, by cause (`islet_store_event_reads_total`).
    var readCounts: [ReadCause: Int] { reads.withLock { $0 } }

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
                state.waiters.append(Waiter(id: written.last, since: .now, continuation: continuation))
                // Events whose ids this node does not know one by one: the reader reads them.
                guard !written.events.isEmpty else { return ([], Self.askRead(&state, .commit)) }
                return know(written.events, &state)
            }
            wake?.resume()
            for continuation in ready { continuation.resume(returning: true) }
        }
    }

    /// Takes another node's (or this node's own) commit's notification.
    func noticed(_ notice: EventNotice) {
        let (ready, wake) = state.withLock { state -> ([CheckedContinuation<Bool, Never>], CheckedContinuation<Void, Never>?) in
            guard let last = notice.ids.last, last > state.position, !state.stopped else { return ([], nil) }
            guard let events = notice.events, state.known.count + events.count <= Self.knownLimit else {
                return ([], Self.askRead(&state, .notification))
            }
            return know(events, &state)
        }
        wake?.resume()
        for continuation in ready { continuation.resume(returning: true) }
    }

    /// Keeps `events` as known, appends what follows the last appended, and takes the waiters
    /// whose events are all appended now; wakes the reader when something starts waiting.
    private func know(
        _ events: [EncodedEvent], _ state: inout State
    ) -> ([CheckedContinuation<Bool, Never>], CheckedContinuation<Void, Never>?) {
        for event in events where event.id > state.position { state.known[event.id] = event }
        let ready = appendKnown(&state)
        guard state.waitingSince == nil, !state.known.isEmpty || !state.waiters.isEmpty else { return (ready, nil) }
        // The reader, asleep without a deadline, takes one.
        state.waitingSince = .now
        state.signaled = true
        defer { state.wake = nil }
        return (ready, state.wake)
    }

    /// Appends the known events that follow the last appended, in id order, and takes the
    /// waiters whose events are all appended now.
    private func appendKnown(_ state: inout State) -> [CheckedContinuation<Bool, Never>] {
        var run: [EncodedEvent] = []
        while let event = state.known.removeValue(forKey: state.position + 1) {
            run.append(event)
            state.position = event.id
        }
        if !run.isEmpty {
            log.append(Commit(events: run))
            state.waitingSince = .now
        }
        var ready: [CheckedContinuation<Bool, Never>] = []
        state.waiters.removeAll { waiter in
            guard waiter.id <= state.position else { return false }
            ready.append(waiter.continuation)
            return true
        }
        if state.known.isEmpty && state.waiters.isEmpty { state.waitingSince = nil }
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

    /// Asks the reader to read (a notification without its events came, a listener reconnected).
    func wake(_ cause: ReadCause) {
        let wake = state.withLock { Self.askRead(&$0, cause) }
        wake?.resume()
    }

    /// Stops reading; waiters return.
    func stop() {
        let (waiters, wake) = state.withLock { state in
            state.stopped = true
            defer { state.waiters = [] }
            return (state.waiters.map(\.continuation), Self.askRead(&state, .timer))
        }
        wake?.resume()
        for waiter in waiters { waiter.resume(returning: true) }
    }

    private static func askRead(_ state: inout State, _ cause: ReadCause) -> CheckedContinuation<Void, Never>? {
        if !state.woken { state.cause = cause }
        state.woken = true
        state.signaled = true
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
        var cause = ReadCause.start
        while !state.withLock({ $0.stopped }) {
            let position = state.withLock { state in
                state.woken = false
                state.signaled = false
                return state.position
            }
            do {
                let rows = try await events(after: position, store: store, cause: cause)
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
                    if rows.count < Self.page { cause = await idle() }
                    continue
                }
                if let open = gap, open.first == through + 1, ContinuousClock.now - open.since >= Self.gapPatience {
                    try await settle(through: seen, store: store)
                    gap = nil
                    cause = .gap
                    continue
                }
                if gap?.first != through + 1 { gap = (through + 1, .now) }
                // Its commit's notification fills it; a rollback sends none.
                await sleep(upTo: Self.gapPatience)
                cause = .gap
            } catch {
                logger.warning("Reading events from PostgreSQL failed; trying again", metadata: ["error": "\(error)"])
                try? await Task.sleep(for: .milliseconds(200))
                cause = .retry
            }
        }
    }

    /// The events after `id`, in id order, at most `page`; `nil` for a type this version does
    /// not know (passed over, not published).
    private func events(after id: EventID, store: PostgresStore, cause: ReadCause) async throws -> [(id: EventID, event: EncodedEvent?)] {
        reads.withLock { $0[cause, default: 0] += 1 }
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
        let rows = try await events(after: position, store: store, cause: .gap).filter { $0.id <= seen }
        append(rows.compactMap(\.event), through: seen)
    }

    /// Appends events read, through `id`: those appended meanwhile are left out, and known ones
    /// up to it let go.
    private func append(_ events: [EncodedEvent], through id: EventID) {
        let ready = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            let new = events.drop { $0.id <= state.position }
            if !new.isEmpty { log.append(Commit(events: Array(new))) }
            if id > state.position {
                state.position = id
                state.known = state.known.filter { $0.key > id }
            }
            return appendKnown(&state)
        }
        for continuation in ready { continuation.resume(returning: true) }
    }

    /// Returns when a read is asked for, or known events have waited `readPatience` for the
    /// ones before them: why the tail reads.
    private func idle() async -> ReadCause {
        while true {
            let wait = state.withLock { state -> Result<Duration?, Never>? in
                state.signaled = false
                if state.woken || state.stopped { return nil }
                guard let since = state.waitingSince else { return .success(nil) }
                return .success(Self.readPatience - (ContinuousClock.now - since))
            }
            switch wait {
            case nil: return state.withLock { $0.cause }
            case .success(nil): await sleep()
            case .success(let left?):
                // Known events appended meanwhile set a new start: look again after the sleep.
                if left <= .zero { return .wait }
                await sleep(upTo: left)
            }
        }
    }

    /// Sleeps until signaled, or `limit` passed.
    private func sleep(upTo limit: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                guard (try? await Task.sleep(for: limit)) != nil else { return }
                self.signal()
            }
            await self.sleep()
            group.cancelAll()
        }
    }

    /// Sleeps until signaled (a read asked for, something started waiting, stopped).
    private func sleep() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if state.signaled || state.woken || state.stopped { return true }
                state.wake = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Wakes the sleeping reader to look again, asking for no read.
    private func signal() {
        let wake = state.withLock { state in
            state.signaled = true
            defer { state.wake = nil }
            return state.wake
        }
        wake?.resume()
    }

    /// Wakes the reader every `pollInterval` — the fallback for a notification missed — and
    /// lets go of commits that waited too long.
    private func tick() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: Self.pollInterval)
            expireWaiters()
            wake(.timer)
        }
    }

    /// LISTENs for other nodes' commits on a connection of its own, reconnecting after a
    /// failure; a (re)connection wakes the reader, in case a notification was missed meanwhile.
    private func listen(store: PostgresStore) async {
        while !Task.isCancelled {
            let route = store.currentRoute
            do {
                try await route.client.withConnection { connection in
                    // A waiting notification sequence does not end when its task is cancelled:
                    // closing the connection ends it, and the pool makes another.
                    try await withTaskCancellationHandler {
                        try await connection.listen(on: PostgresWriter.channel) { notifications in
                            self.wake(.listener)
                            for try await notification in notifications {
                                if let notice = EventNotice(payload: notification.payload) {
                                    self.noticed(notice)
                                } else {
                                    self.wake(.notification)
                                }
                            }
                        }
                    } onCancel: {
                        _ = connection.close() as EventLoopFuture<Void>
                    }
                }
            } catch {
                if Task.isCancelled { return }
                // An idle node learns here first that its host went away (docs/cluster.md §7).
                store.hostLost(error, generation: route.generation)
                logger.debug("Listening for events failed; listening again", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: .seconds(1))
        }
    }
}
