import Foundation
import GRDB
import IsletCore
import IsletEngine
import Synchronization

/// Whether the store's writes succeed. A store that can still be read but not written — a full
/// disk, a read-only or failing file system — would otherwise look healthy to `/healthz` while
/// every change fails.
///
/// Every write reports its outcome here. A write that fails for the storage's sake (not a
/// refusal by the rules) marks the store failing until a later write succeeds; a probe write
/// (`SQLiteStore.checkWrites(quietInterval:)`) lets a health check find out when it has recovered, even if no
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
