import Foundation
import Synchronization

/// Bounds how long a change waits for PostgreSQL to confirm its commit (`store.commitTimeout`).
///
/// A commit the database holds — a primary whose `synchronous_standby_names` names a standby
/// that is not there (a promoted standby that kept its primary's settings), a lock another node
/// never lets go of — would hold its lane, its connection and its callers for as long as it
/// lasts, and PostgreSQL has no timeout for that wait. A lane waits for its batch at most the
/// limit (`PostgresWriter.runLane`); then the batch's changes are answered `CommitUnconfirmed`
/// (503) with what the database says they wait for. When that is a synchronous standby, commits
/// are *held*: from then on a change is answered at once, without being sent, until every batch
/// so answered has ended — its commit confirmed (a standby came, the setting was cleared) or
/// failed. Any other wait (a stalled server, a lock) may end by itself: the next batch is tried. Such a batch is never abandoned: confirmed late, it takes effect and
/// is published, as a change whose answer was lost is, so the answer says it may.
final class CommitWatch: Sendable {
    /// A batch a lane has begun, and whether its changes were answered unconfirmed.
    private struct Begun {
        let jobs: [PostgresWriter.Job]
        var answered = false
    }

    private struct State {
        var begun: [Int: Begun] = [:]
        var next = 0
        /// Why commits are held, while a batch answered unconfirmed has not ended.
        var held: CommitUnconfirmed?
    }

    /// How long a change may wait for its commit's confirmation.
    let limit: Duration
    private let state = Mutex(State())
    /// Told when commits become held (with why) and when they are confirmed again (`nil`).
    private let changed: @Sendable (CommitUnconfirmed?) -> Void

    init(limit: Duration, changed: @escaping @Sendable (CommitUnconfirmed?) -> Void) {
        self.limit = limit
        self.changed = changed
    }

    /// Why commits are held, while they are.
    var held: CommitUnconfirmed? { state.withLock { $0.held } }

    /// Says a lane began a batch (or a probe, with no changes); returns its number.
    func begin(_ jobs: [PostgresWriter.Job]) -> Int {
        state.withLock { state in
            defer { state.next += 1 }
            state.begun[state.next] = Begun(jobs: jobs)
            return state.next
        }
    }

    /// Says the batch `number` ended (committed or failed); returns whether its changes were
    /// answered unconfirmed already, so they are not answered again. The last such batch to
    /// end confirms the commits again.
    @discardableResult
    func end(_ number: Int) -> Bool {
        let (answered, confirmed) = state.withLock { state -> (Bool, Bool) in
            let answered = state.begun.removeValue(forKey: number)?.answered ?? false
            guard state.held != nil, !state.begun.values.contains(where: \.answered) else { return (answered, false) }
            state.held = nil
            return (answered, true)
        }
        if confirmed { changed(nil) }
        return answered
    }

    /// Takes the changes of the batch `number`, out of its time, to answer them unconfirmed;
    /// `nil` when it ended meanwhile (they are answered as it ended).
    func overdue(_ number: Int) -> [PostgresWriter.Job]? {
        state.withLock { state in
            guard let begun = state.begun[number], !begun.answered else { return nil }
            state.begun[number]?.answered = true
            return begun.jobs
        }
    }

    /// Says commits are held, for `reason`, unless they are already, or every batch answered
    /// unconfirmed has ended meanwhile; returns why they are held now, if they are.
    func hold(_ reason: CommitUnconfirmed) -> CommitUnconfirmed? {
        let (held, became) = state.withLock { state -> (CommitUnconfirmed?, Bool) in
            if let held = state.held { return (held, false) }
            guard state.begun.values.contains(where: \.answered) else { return (nil, false) }
            state.held = reason
            return (reason, true)
        }
        if became { changed(reason) }
        return held
    }
}

/// The database has not confirmed a change's commit within `store.commitTimeout`: answered
/// `503 unavailable`, with what the database says it waits for. The change may yet take
/// effect, when the database confirms it.
struct CommitUnconfirmed: Error, Sendable, CustomStringConvertible {
    let since: Date
    let limit: Duration
    /// What the database waits for, as `pg_stat_activity` says.
    let reason: String

    var description: String { "PostgreSQL has not confirmed commits within \(limit): \(reason)" }

    /// The caller's answer: nothing is known to be saved, nor known not to be.
    var message: String {
        "\(description). The change may yet take effect when PostgreSQL confirms it; "
            + "send it again with the same Idempotency-Key to be sure it is made once (docs/cluster.md, \"Commits the database holds\")."
    }
}
