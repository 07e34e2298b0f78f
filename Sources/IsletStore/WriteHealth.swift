import Foundation
import GRDB
import IsletCore
import Synchronization

/// Whether the store's writes succeed. A store that can still be read but not written — a full
/// disk, a read-only or failing file system — would otherwise look healthy to `/healthz` while
/// every change fails.
///
/// Every write reports its outcome here. A write that fails for the storage's sake (not a
/// refusal by the rules) marks the store failing until a later write succeeds; a probe write
/// (`SQLiteStore.checkWrites()`) lets a health check find out when it has recovered, even if no
/// change has come since.
final class WriteHealth: Sendable {
    private struct State {
        var failure: WriteFailure?
        var lastSuccess: ContinuousClock.Instant?
    }

    private let state = Mutex(State())
    private let changed: @Sendable (WriteFailure?) -> Void

    /// - Parameter changed: Told when writes start failing (with the failure) and when they recover (`nil`).
    init(changed: @escaping @Sendable (WriteFailure?) -> Void) {
        self.changed = changed
    }

    /// The failure that has lasted since the last successful write, if any.
    var current: WriteFailure? { state.withLock { $0.failure } }

    /// Whether no write has succeeded for `interval` (or ever).
    func quiet(for interval: Duration) -> Bool {
        state.withLock { state in state.lastSuccess.map { ContinuousClock.now - $0 >= interval } ?? true }
    }

    func succeeded() {
        let now = ContinuousClock.now
        let recovered = state.withLock { state -> Bool in
            defer {
                state.failure = nil
                state.lastSuccess = now
            }
            return state.failure != nil
        }
        if recovered { changed(nil) }
    }

    /// Records `error` if it is the storage's failure; refusals and programming errors are not.
    func failed(_ error: any Error) {
        guard let message = Self.storageFailure(error) else { return }
        let started = state.withLock { state -> WriteFailure? in
            guard state.failure == nil else { return nil }
            state.failure = WriteFailure(since: Date(), message: message)
            return state.failure
        }
        if let started { changed(started) }
    }

    /// What went wrong, when `error` says the storage itself cannot take writes.
    static func storageFailure(_ error: any Error) -> String? {
        guard let error = error as? DatabaseError else { return nil }
        switch error.resultCode.primaryResultCode {
        case .SQLITE_FULL: return "the disk is full (SQLite: \(error.message ?? "database or disk is full"))"
        // ABORT: SQLite rolled the transaction back after one of these.
        case .SQLITE_IOERR, .SQLITE_CANTOPEN, .SQLITE_READONLY, .SQLITE_CORRUPT, .SQLITE_NOTADB, .SQLITE_NOMEM,
             .SQLITE_PROTOCOL, .SQLITE_BUSY, .SQLITE_LOCKED, .SQLITE_ABORT:
            return "SQLite: \(error.message ?? "\(error.resultCode)")"
        default:
            return nil
        }
    }
}

/// Writes to the store are failing, since a time, for a reason.
public struct WriteFailure: Hashable, Sendable {
    /// When the first failing write happened.
    public var since: Date
    /// Why, as SQLite says it.
    public var message: String
}

extension SQLiteStore {
    /// The current write failure, if any. When writes have been failing, or none has succeeded
    /// for `quietInterval`, it first tries a probe write: a store that recovered (space freed)
    /// reports healthy again without waiting for a change — a node taken out of a load balancer
    /// for failing its health check would otherwise never get one — and one whose disk filled
    /// while nothing changed reports failing before a client's change is refused. A store that
    /// wrote within the interval is not probed: a health check every second costs nothing.
    ///
    /// The probe writes as much as a change does (a few pages, which a full disk or database
    /// cannot take: 8 KB that need fresh pages) and removes it in the same transaction.
    public func checkWrites(quietInterval: Duration = .seconds(10)) async -> WriteFailure? {
        guard health.current != nil || health.quiet(for: quietInterval) else { return nil }
        do {
            try await write { db in
                try db.execute(sql: "INSERT INTO writeProbe (at, pad) VALUES (?, zeroblob(8192))", arguments: [Date().timeIntervalSince1970])
                try db.execute(sql: "DELETE FROM writeProbe")
            }
        } catch {
            return health.current
        }
        return nil
    }
}
