import Foundation
import IsletCore
import IsletEngine
import PostgresNIO

/// The PostgreSQL store's writer: group commit over a few lanes, each a loop that takes the
/// waiting changes, runs them in one SERIALIZABLE transaction — each in its own savepoint, on a
/// thread of the store's, over a pooled connection — and commits.
///
/// - A transaction PostgreSQL aborts to keep the rules serializable (two nodes counting one
///   device's activities at once, say) is run again from the start, every change in it, up to
///   `attempts` times: a use case is a function of what it reads, so running it again is safe.
/// - Just before committing, the transaction takes the events lock and draws its events' ids
///   from the sequence (`insertEvents`); the lock is held until the commit is visible, so ids
///   become visible in the order they were drawn.
/// - Once committed, the lane waits for the tail to have published the events (every node's,
///   up to its last id), then appends the transaction's effects to the commit log: the answer
///   to a change means its events are on the streams, as with SQLite.
final class PostgresWriter: Sendable {
    /// One caller's change.
    struct Job: Sendable {
        /// Runs the change in its own savepoint; what it did, if it held.
        let run: @Sendable (PostgresSession) -> Done?
        /// Called once, after the transaction: with the commit's number, or the error that undid it.
        let finish: @Sendable (Result<UInt64, any Error>) -> Void
        /// The error the change itself failed with in its last run, if it did.
        let failure: @Sendable () -> (any Error)?
    }

    /// What a change that held did.
    struct Done {
        var events: [PostgresTransaction.PendingEvent]
        var deadline: Date?
        var effects: Effects
    }

    /// Runs of one change's transaction before it is told it could not be made.
    static let attempts = 20
    /// The lock every transaction holds from drawing its events' ids until it commits.
    static let eventsLock: Int64 = 0x1515_7E70_0002
    /// The channel a commit with events notifies (`EventTail` listens).
    static let channel = "islet_events"

    private let queue = WriteQueue<Job>(maximumBatch: 256)

    func write<T: Sendable>(now: Date, _ work: @escaping @Sendable (any Transaction) throws -> T) async throws -> Committed<T> {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Committed<T>, any Error>) in
            let outcome = WriteOutcome<T>()
            let job = Job(
                run: { session in
                    let transaction = PostgresTransaction(session: session, now: now)
                    do {
                        try session.execute("SAVEPOINT change")
                        do {
                            outcome.result = .success(try work(transaction))
                            try session.execute("RELEASE SAVEPOINT change")
                        } catch {
                            outcome.result = .failure(error)
                            // After an error PostgreSQL takes nothing in the transaction until
                            // it is rolled back to before the change.
                            try session.execute("ROLLBACK TO SAVEPOINT change")
                            return nil
                        }
                    } catch {
                        outcome.result = .failure(error)
                        return nil
                    }
                    return Done(events: transaction.events, deadline: transaction.earliestDeadline, effects: transaction.effects)
                },
                finish: { transaction in outcome.answer(continuation, transaction: transaction) },
                failure: { outcome.failure }
            )
            if !queue.enqueue(job) {
                job.finish(.failure(IsletError(.unavailable, "The server is shutting down; nothing was changed.")))
            }
        }
    }

    /// Takes no more changes; the lanes finish those waiting and return.
    func stop() {
        queue.stop()
    }

    /// One lane: batches until `stop()`.
    func runLane(store: PostgresStore) async {
        while let batch = await queue.nextBatch() {
            let outcomes: [(jobs: [Job], result: Result<(Commit, EventID), any Error>)]
            do {
                outcomes = try await store.withConnection { connection in
                    let logger = store.logger
                    return try await store.threads.runIfActive {
                        Self.commit(batch, session: PostgresSession(connection: connection, logger: logger))
                    }
                }
            } catch {
                outcomes = [(batch, .failure(error))]
            }
            for (jobs, result) in outcomes {
                switch result {
                case .success(let (commit, lastEvent)):
                    await store.tail.published(through: lastEvent)
                    let number = store.commits.append(commit)
                    for job in jobs { job.finish(.success(number)) }
                case .failure(let error):
                    // A change that met the cause first says it; the others are told it too.
                    let cause = jobs.lazy.compactMap { $0.failure() }.first { PostgresFailure.storageFailure($0) != nil } ?? error
                    for job in jobs { job.finish(.failure(cause)) }
                    // The database is gone: the changes that queued meanwhile would each wait
                    // for a connection in turn; they are answered now, as these were.
                    if PostgresFailure.storageFailure(cause) != nil {
                        for job in queue.drain() { job.finish(.failure(cause)) }
                    }
                }
            }
        }
    }

    /// Commits a batch: in one transaction, or — when PostgreSQL aborted it to keep the rules
    /// serializable — each change in a transaction of its own, so one contended change does not
    /// hold back the others (a batch is aborted whenever any of its changes collides, and runs
    /// again as whole would collide again).
    private static func commit(_ batch: [Job], session: PostgresSession) -> [(jobs: [Job], result: Result<(Commit, EventID), any Error>)] {
        let first = Result { try transaction(batch, session: session, attempts: batch.count == 1 ? attempts : 1) }
        guard batch.count > 1, case .failure(let error) = first, PostgresFailure.isRetryable(error) else {
            return [(batch, first)]
        }
        return batch.map { job in ([job], Result { try transaction([job], session: session, attempts: attempts) }) }
    }

    /// Runs changes in one transaction until it commits, up to `attempts` times; returns what
    /// the changes did and the last event id it drew (0 for none).
    ///
    /// After a collision the change runs again holding, before its transaction begins, a lock
    /// on each thing it read that changes contend for (`PostgresSession.contended`): writers
    /// hammering one activity from several nodes then take turns instead of aborting each
    /// other over and over. The lock is taken outside the transaction, so its snapshot is
    /// taken after the last holder committed, and SERIALIZABLE still decides what is allowed.
    private static func transaction(_ batch: [Job], session: PostgresSession, attempts: Int) throws -> (Commit, EventID) {
        var attempt = 1
        var locks: [Int64] = []
        defer { if !locks.isEmpty { _ = try? session.execute("SELECT pg_advisory_unlock_all()") } }
        while true {
            session.contended = []
            do {
                // Sorted, so two changes that lock the same things never wait for each other.
                for lock in locks { try session.execute("SELECT pg_advisory_lock($1)", [lock]) }
                try session.execute("BEGIN ISOLATION LEVEL SERIALIZABLE")
                var commit = Commit()
                var events: [PostgresTransaction.PendingEvent] = []
                for job in batch {
                    if let done = job.run(session) {
                        events += done.events
                        commit.add(events: [], deadline: done.deadline, effects: done.effects)
                    } else if let failure = job.failure(), PostgresFailure.isRetryable(failure) || PostgresFailure.storageFailure(failure) != nil {
                        throw failure
                    }
                }
                let last = try insertEvents(events, session: session)
                try session.execute("COMMIT")
                return (commit, last)
            } catch {
                _ = try? session.execute("ROLLBACK")
                guard PostgresFailure.isRetryable(error), attempt < attempts else { throw error }
                let wanted = Array(Set(locks + session.contended.map(lockKey))).sorted()
                if wanted != locks {
                    if !locks.isEmpty { try session.execute("SELECT pg_advisory_unlock_all()") }
                    locks = wanted
                } else {
                    // Apart, and further apart each time, so the transactions that collided do
                    // not collide again: up to 1, 2, 4… ms, at most 64.
                    Thread.sleep(forTimeInterval: Double.random(in: 0...1) * Double(1 << min(attempt, 6)) / 1000)
                }
                attempt += 1
            }
        }
    }

    /// The advisory lock for a contended thing: FNV-1a of its name (stable across nodes and
    /// builds, unlike Swift's `hashValue`), kept clear of the store's own locks' range.
    static func lockKey(_ name: String) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        return Int64(bitPattern: hash | (1 << 62))
    }

    /// Writes the transaction's events, numbered from the sequence under the events lock, and
    /// notifies the tails; returns the last id.
    ///
    /// The lock is what keeps ids in commit order: a transaction draws ids only while it holds
    /// the lock, and holds it until its commit is visible, so no id becomes visible after a
    /// higher one (docs/cluster.md, "Event ids"). A transaction that rolls back leaves a gap,
    /// which readers pass over; no id below a visible one ever appears later.
    private static func insertEvents(_ events: [PostgresTransaction.PendingEvent], session: PostgresSession) throws -> EventID {
        guard !events.isEmpty else { return 0 }
        try session.execute("SELECT pg_advisory_xact_lock($1)", [eventsLock])
        var last: EventID = 0
        // 6 values an event; PostgreSQL takes at most 65,535 in a statement.
        for chunk in stride(from: 0, to: events.count, by: 1_000).map({ events[$0..<min($0 + 1_000, events.count)] }) {
            var rows: [String] = []
            var values: [(any PostgresDynamicTypeEncodable)?] = []
            for event in chunk {
                let n = values.count
                rows.append("(nextval('event_id'), $\(n + 1), $\(n + 2), $\(n + 3), $\(n + 4), $\(n + 5), $\(n + 6))")
                values += [event.time.timeIntervalSince1970, event.type.rawValue, event.bundleId, event.deviceId, event.activityId, event.data]
            }
            // Rows are numbered in the order they are listed: the transaction's events keep theirs.
            let ids = try session.values(
                "INSERT INTO event (id, time, type, bundleId, deviceId, activityId, data) VALUES \(rows.joined(separator: ", ")) RETURNING id",
                values, as: Int64.self
            )
            last = max(last, ids.max() ?? 0)
        }
        try session.execute("SELECT pg_notify($1, $2)", [channel, String(last)])
        return last
    }
}
