import Foundation
import IsletCore
import Synchronization

/// Whether the store's writes succeed. A store that can still be read but not written — a full
/// disk, a read-only or failing file system — would otherwise look healthy to `/healthz` while
/// every change fails.
///
/// Every write reports its outcome here. A write that fails for the storage's sake (not a
/// refusal by the rules) marks the store failing until a later write succeeds; a probe write
/// (`Store.checkWrites(quietInterval:)`) lets a health check find out when it has recovered, even
/// if no change has come since. Each store says which of its errors are the storage's.
public final class WriteHealth: Sendable {
    private struct State {
        var failure: WriteFailure?
        var lastSuccess: ContinuousClock.Instant?
    }

    private let state = Mutex(State())
    private let changed: @Sendable (WriteFailure?) -> Void
    private let storageFailure: @Sendable (any Error) -> String?

    /// - Parameters:
    ///   - storageFailure: What went wrong, when an error says the storage itself cannot take
    ///     writes (a full disk, a lost database); `nil` for a refusal or a mistake.
    ///   - changed: Told when writes start failing (with the failure) and when they recover (`nil`).
    public init(storageFailure: @escaping @Sendable (any Error) -> String?, changed: @escaping @Sendable (WriteFailure?) -> Void) {
        self.storageFailure = storageFailure
        self.changed = changed
    }

    /// The failure that has lasted since the last successful write, if any.
    public var current: WriteFailure? { state.withLock { $0.failure } }

    /// Whether no write has succeeded for `interval` (or ever).
    public func quiet(for interval: Duration) -> Bool {
        state.withLock { state in state.lastSuccess.map { ContinuousClock.now - $0 >= interval } ?? true }
    }

    public func succeeded() {
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
    public func failed(_ error: any Error) {
        guard let message = storageFailure(error) else { return }
        let started = state.withLock { state -> WriteFailure? in
            guard state.failure == nil else { return nil }
            state.failure = WriteFailure(since: Date(), message: message)
            return state.failure
        }
        if let started { changed(started) }
    }
}
