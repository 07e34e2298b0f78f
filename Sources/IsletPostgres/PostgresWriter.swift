import Foundation
import IsletCore
import IsletEngine
import IsletSQL
import PostgresNIO
import Synchronization

/// The PostgreSQL store's writer: group commit over a few lanes, each a loop that takes the
/// waiting changes, runs them in one `READ COMMITTED` transaction — each change undone alone if
/// it fails (a savepoint set by its first write), on a thread of the store's, over a pooled
/// connection — and commits.
///
/// - Concurrency is row locks, taken by the reads (`PostgresReading`): what a change decides
///   on it locks, so two changes to different things never wait for or abort each other, and
///   two changes to one thing take turns. A batch never waits for a lock (`Locking.nowait`), so
///   batches cannot deadlock: a change that meets a lock another transaction holds is undone
///   and runs again in the next transaction, after that one's commit; after `busyRounds` it
///   runs alone, waiting for its locks.
/// - Just before committing, the transaction draws its events' ids from the sequence under the
///   events lock taken shared (`insertEvents`): commits do not take turns, and the tail
///   publishes ids in order whatever order they become visible in (`EventTail`).
/// - Once committed, the lane waits for the tail to have published the events (every node's,
///   up to its last id), then appends the transaction's effects to the commit log: the answer
///   to a change means its events are on the streams, as with SQLite.
/// - A lane waits for its batch at most `store.commitTimeout` (`CommitWatch`): a commit the
///   database holds — for a synchronous standby that is not there — is answered 503 with what
///   the database waits for, and the changes that come while it is held are answered at once.
final class PostgresWriter: Sendable {
    /// One caller's change.
    struct Job: Sendable {
        /// Runs the change; what it did, if it held.
        let run: @Sendable (PostgresSession) -> Done?
        /// Called once, after the transaction: with the commit's number, or the error that undid it.
        let finish: @Sendable (Result<UInt64, any Error>) -> Void
        /// The error the change itself failed with in its last run, if it did.
        let failure: @Sendable () -> (any Error)?
        /// The activity the change is about, if known before it runs (`Store.write`).
        let activity: ActivityID?
    }

    /// What a change that held did.
    struct Done {
        var events: [PostgresTransaction.PendingEvent]
        var deadline: Date?
        var effects: Effects
    }

    /// What one transaction did: its commit, its events as numbered, the changes it answers (held
    /// or refused by their rules) and those that met a held lock and must run again.
    private struct Ran {
        var commit = Commit()
        var events = WrittenEvents()
        var answered: [Job] = []
        var busy: [Job] = []
    }

    /// Runs of a change alone (waiting for its locks) before it is told it could not be made.
    static let attempts = 20
    /// Transactions a change that met held locks runs again in, without waiting, before it
    /// runs alone.
    static let busyRounds = 3
    /// The lock every transaction holds, shared, from drawing its events' ids until it ends;
    /// taken exclusively, it waits for every transaction that drew before (`EventTail`).
    static let eventsLock: Int64 = 0x1515_7E70_0002
    /// The channel a commit with events notifies (`EventTail` listens).
    static let channel = "islet_events"

    private let queue = WriteQueue<Job>(maximumBatch: 256)
    /// Changes run again because another transaction held what they lock: how often
    /// transactions meet each other (`/metrics`, the benchmark).
    let contention = Atomic<Int>(0)
    /// The batches begun, and whether the database holds their commits.
    let watch: CommitWatch

    init(watch: CommitWatch) {
        self.watch = watch
    }

    func write<T: Sendable>(
        now: Date, about activity: ActivityID?, _ work: @escaping @Sendable (any Transaction) throws -> T
    ) async throws -> Committed<T> {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Committed<T>, any Error>) in
            let outcome = WriteOutcome<T>()
            let job = Job(
                run: { session in
                    let transaction = PostgresTransaction(session: session, now: now)
                    do {
                        outcome.result = .success(try work(transaction))
                    } catch {
                        outcome.result = .failure(error)
                        return nil
                    }
                    return Done(events: transaction.events, deadline: transaction.earliestDeadline, effects: transaction.effects)
                },
                finish: { transaction in outcome.answer(continuation, transaction: transaction) },
                failure: { outcome.failure },
                activity: activity
            )
            // The database holds the commits before: this one would wait with them.
            if let held = watch.held {
                job.finish(.failure(held))
            } else if !queue.enqueue(job) {
                job.finish(.failure(IsletError(.unavailable, "The server is shutting down; nothing was changed.")))
            }
        }
    }

    /// Takes no more changes; the lanes finish those waiting and return.
    func stop() {
        queue.stop()
    }

    /// One lane: batches until `stop()`, each waited for at most `watch.limit`. A batch the
    /// database holds longer is answered unconfirmed and goes on in its own task, to its end;
    /// the lane takes the next.
    func runLane(store: PostgresStore) async {
        while let batch = await queue.nextBatch() {
            if let held = watch.held {
                for job in batch { job.finish(.failure(held)) }
                continue
            }
            let number = watch.begin(batch)
            let ended: Void? = try? await waitAtMost(watch.limit, cancellingLateWork: false) {
                await self.run(batch, number: number, store: store)
            }
            if ended == nil { await answerUnconfirmed(number, store: store) }
        }
    }

    /// Commits a batch and answers its changes — unless they were answered unconfirmed
    /// meanwhile; what it committed is published either way.
    private func run(_ batch: [Job], number: Int, store: PostgresStore) async {
        let outcomes: [(jobs: [Job], result: Result<(Commit, WrittenEvents), any Error>)]
        do {
            outcomes = try await store.withConnection { connection in
                let logger = store.logger
                return try await store.threads.runIfActive {
                    self.commit(batch, session: PostgresSession(connection: connection, logger: logger, prepared: store.prepared))
                }
            }
        } catch {
            outcomes = [(batch, .failure(error))]
        }
        let answered = watch.end(number)
        for (jobs, result) in outcomes {
            switch result {
            case .success(let (commit, events)):
                await store.tail.published(events)
                let number = store.commits.append(commit)
                if !answered { for job in jobs { job.finish(.success(number)) } }
            case .failure(let error):
                // A change that met the cause first says it; the others are told it too.
                let cause = jobs.lazy.compactMap { $0.failure() }.first { PostgresFailure.storageFailure($0) != nil } ?? error
                if !answered { for job in jobs { job.finish(.failure(cause)) } }
                // The database is gone: the changes that queued meanwhile would each wait
                // for a connection in turn; they are answered now, as these were.
                if PostgresFailure.storageFailure(cause) != nil {
                    for job in queue.drain() { job.finish(.failure(cause)) }
                }
            }
        }
    }

    /// The batch `number` is out of its time: its changes are answered with what the database
    /// waits for. When that is a synchronous standby, nothing commits until one confirms: the
    /// changes waiting are answered too, and commits are held until the batch ends. Another
    /// wait (a stalled server, a lock) may end by itself, and the next batch is tried.
    private func answerUnconfirmed(_ number: Int, store: PostgresStore) async {
        guard let jobs = watch.overdue(number) else { return }
        let wait = await store.whyCommitsWait()
        let unconfirmed = CommitUnconfirmed(since: Date(), limit: watch.limit, reason: wait.reason)
        guard wait.forStandby else {
            for job in jobs { job.finish(.failure(unconfirmed)) }
            return
        }
        let held = watch.hold(unconfirmed) ?? unconfirmed
        for job in jobs + queue.drain() { job.finish(.failure(held)) }
    }

    /// Commits a batch: in one transaction, the changes that met held locks again in the next
    /// (up to `busyRounds`), then each of those alone, waiting for its locks. A transaction that
    /// fails as a whole for a reason of one change's (a statement's own error) is run again as
    /// one transaction per change, so that change fails alone.
    private func commit(_ batch: [Job], session: PostgresSession) -> [(jobs: [Job], result: Result<(Commit, WrittenEvents), any Error>)] {
        var outcomes: [(jobs: [Job], result: Result<(Commit, WrittenEvents), any Error>)] = []
        var waiting = batch
        for _ in 0..<Self.busyRounds where !waiting.isEmpty {
            do {
                let ran = try Self.transaction(waiting, session: session, locking: .nowait)
                if !ran.answered.isEmpty { outcomes.append((ran.answered, .success((ran.commit, ran.events)))) }
                contention.add(ran.busy.count, ordering: .relaxed)
                waiting = ran.busy
            } catch {
                // A change's write sent alone at its end (`PostgresSession.endChange`) that met
                // another transaction's — two nodes creating the default device at once — fails
                // the transaction: that change too runs alone, and finds the other's row.
                guard waiting.count > 1 || PostgresFailure.isBusy(error), PostgresFailure.storageFailure(error) == nil else {
                    outcomes.append((waiting, .failure(error)))
                    return outcomes
                }
                break
            }
        }
        for job in waiting {
            outcomes.append(([job], Result { try Self.alone(job, session: session) }))
        }
        return outcomes
    }

    /// Runs one change in transactions of its own, waiting for its locks, until it commits (or
    /// fails by its rules), up to `attempts` times: a deadlock between two such changes is
    /// broken by PostgreSQL aborting one (40P01), which runs again.
    private static func alone(_ job: Job, session: PostgresSession) throws -> (Commit, WrittenEvents) {
        var attempt = 1
        while true {
            do {
                let ran = try transaction([job], session: session, locking: .wait)
                if ran.busy.isEmpty || attempt >= attempts { return (ran.commit, ran.events) }
            } catch {
                // A deadlock between changes that wait, or a write sent alone that met another
                // transaction's (`PostgresSession.endChange`).
                guard PostgresFailure.isRetryable(error) || PostgresFailure.isBusy(error), attempt < attempts else { throw error }
            }
            // Apart, and further apart each time, so the transactions that collided do not
            // collide again: up to 1, 2, 4… ms, at most 64.
            Thread.sleep(forTimeInterval: Double.random(in: 0...1) * Double(1 << min(attempt, 6)) / 1000)
            attempt += 1
        }
    }

    /// Runs changes in one transaction and commits it.
    private static func transaction(_ jobs: [Job], session: PostgresSession, locking: Locking) throws -> Ran {
        do {
            try session.unprepared("BEGIN ISOLATION LEVEL READ COMMITTED")
            session.beginTransaction(locking: locking)
            try session.lockActivities(Set(jobs.compactMap(\.activity)))
            var ran = Ran()
            var events: [PostgresTransaction.PendingEvent] = []
            for (number, job) in jobs.enumerated() {
                session.beginChange(number)
                let done = job.run(session)
                let failure = done == nil ? job.failure() : nil
                try session.endChange(failure: failure)
                if let done {
                    events += done.events
                    ran.commit.add(events: [], deadline: done.deadline, effects: done.effects)
                    ran.answered.append(job)
                } else if let failure, PostgresFailure.isBusy(failure) {
                    ran.busy.append(job)
                } else if let failure, PostgresFailure.isRetryable(failure) || PostgresFailure.storageFailure(failure) != nil {
                    throw failure
                } else {
                    // Refused by its rules: answered with its error once the others commit.
                    ran.answered.append(job)
                }
            }
            try session.flushActivities()
            ran.events = try insertEvents(events, session: session)
            try session.unprepared("COMMIT")
            session.locking = .none
            return ran
        } catch {
            session.locking = .none
            _ = try? session.unprepared("ROLLBACK")
            throw error
        }
    }

    /// Writes the transaction's events, numbered from the sequence, and notifies the tails;
    /// returns them as numbered.
    ///
    /// Ids are drawn under the events lock taken *shared* (`drawing`), held until the
    /// transaction ends: commits do not take turns for it, so ids may become visible out of
    /// order — 10 drawn by A, 11 by B, B committed first. The tail publishes only up to the
    /// first id not visible yet, and when such a gap lasts it takes the lock exclusively for a
    /// moment (`EventTail`): every transaction that drew before has then ended, and an id still
    /// missing was rolled back (docs/cluster.md, "Event ids").
    private static func insertEvents(_ events: [PostgresTransaction.PendingEvent], session: PostgresSession) throws -> WrittenEvents {
        guard !events.isEmpty else { return WrittenEvents() }
        // One statement whatever the count, the lock taken in it: the events as arrays,
        // numbered in their order (`unnest` gives rows in array order, `nextval` runs row by
        // row, and no row is made before the lock's one row is there); the notification, with
        // the ids and the events when they fit (`EventNotice`), in the same trip — more ids
        // than a notification holds, the last alone (the tails read). An event without an
        // activity has "" for it.
        let ids = try session.query(
            """
            WITH written AS (
                INSERT INTO event (id, time, type, bundleId, deviceId, activityId, data)
                SELECT nextval('event_id'), time, type, bundleId, deviceId, NULLIF(activityId, ''), data
                FROM (SELECT pg_advisory_xact_lock_shared($8)) AS drawing,
                    unnest($1::float8[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])
                    AS e(time, type, bundleId, deviceId, activityId, data)
                RETURNING id
            )
            SELECT array_agg(id ORDER BY id), pg_notify($7, CASE WHEN count(*) <= $10
                THEN string_agg(id::text, ',' ORDER BY id) || $9 ELSE max(id)::text END) FROM written
            """,
            [
                events.map { $0.time.timeIntervalSince1970 }, events.map(\.type.rawValue), events.map(\.bundleId), events.map(\.deviceId),
                events.map { $0.activityId ?? "" }, events.map(\.data), channel, eventsLock, EventNotice.body(of: events), EventNotice.maximumIds,
            ]
        ).first.map { row in try PostgresRow.Columns.binary(row.makeRandomAccess()[0]).decode([Int64].self) } ?? []
        return WrittenEvents(numbering: events, ids: ids)
    }
}

/// A transaction's events as the database numbered them: handed to the tail, which publishes
/// them itself when they follow the last it published (`EventTail.published(_:)`) — no read
/// back of what this node just wrote.
struct WrittenEvents: Sendable {
    /// The events, ids increasing (not always one after the other: another transaction may
    /// have drawn between them); empty when their ids are not known one by one.
    private(set) var events: [EncodedEvent] = []
    /// The last id, or 0 for none.
    private(set) var last: EventID = 0

    init() {}

    /// The events numbered by `ids`, increasing in their order (as `nextval` drew them).
    init(numbering pending: [PostgresTransaction.PendingEvent], ids: [EventID]) {
        self.last = ids.last ?? 0
        guard ids.count == pending.count else { return }
        events = zip(ids, pending).map { id, event in event.numbered(id) }
    }
}
