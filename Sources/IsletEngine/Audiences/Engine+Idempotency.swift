import Foundation
import IsletCore

/// A request that gave an `Idempotency-Key`, while it runs: each change the engine writes for it
/// holds the key in the change's own transaction (`Engine.write`), so a request whose answer is
/// lost after its change committed is never done again, and of two requests with one key that
/// run at once only the first to commit changes anything.
public struct IdempotencyClaim: Sendable, Hashable {
    public let scope: String
    public let key: String
    public let digest: String
    /// This request, among others with the key.
    public let holder: String

    public init(scope: String, key: String, digest: String) {
        self.scope = scope
        self.key = key
        self.digest = digest
        self.holder = UUID().uuidString
    }

    /// The claim of the request this task serves, if it gave a key.
    @TaskLocal public static var current: IdempotencyClaim?
}

/// What to do with a request that gave an `Idempotency-Key`.
public enum IdempotencyDecision: Sendable {
    /// Run it: its change will hold the key.
    case proceed(IdempotencyClaim)
    /// Answer what the first request with the key was answered.
    case replay(IdempotencyRecord)
}

extension Engine {
    // MARK: Idempotency-Key (docs/audiences.md)

    /// Reads what a caller's key says of a request (its digest): the first answer to replay; or
    /// `idempotencyKeyReused` for another request under the key, `idempotencyKeyInUse` while the
    /// first request with it has changed something but is not answered yet (it runs, or its
    /// answer was lost); else the request runs. Nothing is written here.
    public func claimIdempotencyKey(scope: String, key: String, digest: String) async throws -> IdempotencyDecision {
        try Idempotency.check(key)
        let kept = try await read { [now = clock.now()] store in
            try store.idempotencyRecord(scope: scope, key: key).flatMap { Self.isKept($0, at: now) ? $0 : nil }
        }
        guard let kept else { return .proceed(IdempotencyClaim(scope: scope, key: key, digest: digest)) }
        try Self.check(kept, digest: digest)
        return .replay(kept)
    }

    /// In a change's transaction: the key held for the request (written with the change), or
    /// the change refused because another request with the key holds it.
    static func hold(_ claim: IdempotencyClaim, in tx: any Transaction) throws {
        if let kept = try tx.idempotencyRecord(scope: claim.scope, key: claim.key), isKept(kept, at: tx.now) {
            // This request's own earlier change.
            if kept.holder == claim.holder { return }
            try check(kept, digest: claim.digest)
            throw IsletError(.idempotencyKeyInUse, "Another request with this \(Idempotency.header) was answered first; retry to get its answer.")
        }
        // Keys older than a day are forgotten a few at a time, as new ones come.
        _ = try tx.purgeIdempotencyRecords(before: tx.now.addingTimeInterval(-Idempotency.lifetime), limit: 20)
        try tx.putIdempotencyRecord(IdempotencyRecord(
            scope: claim.scope, key: claim.key, digest: claim.digest, holder: claim.holder, state: .applied, createdAt: tx.now
        ))
    }

    /// Keeps the answer to a request with a key (a refusal too): a retry gets it. A key another
    /// request holds keeps that one's.
    public func answerIdempotencyKey(_ claim: IdempotencyClaim, status: Int, contentType: String?, body: String) async throws {
        try await write { tx in
            let kept = try tx.idempotencyRecord(scope: claim.scope, key: claim.key).flatMap { Self.isKept($0, at: tx.now) ? $0 : nil }
            guard kept == nil || kept?.holder == claim.holder else { return }
            try tx.putIdempotencyRecord(IdempotencyRecord(
                scope: claim.scope, key: claim.key, digest: claim.digest, holder: claim.holder, state: .answered, status: status,
                contentType: contentType, body: body, createdAt: kept?.createdAt ?? tx.now
            ))
        }
    }

    /// Whether a record is still kept at `now` (a day).
    private static func isKept(_ record: IdempotencyRecord, at now: Date) -> Bool {
        record.createdAt > now.addingTimeInterval(-Idempotency.lifetime)
    }

    /// Refuses another request under a kept key, and one whose first is not answered yet.
    private static func check(_ kept: IdempotencyRecord, digest: String) throws {
        guard kept.digest == digest else {
            throw IsletError(
                .idempotencyKeyReused,
                "This \(Idempotency.header) was used for another request (another method, path or body) in the last 24 hours; use a new key for a new request."
            )
        }
        guard kept.state == .answered else {
            throw IsletError(
                .idempotencyKeyInUse,
                "The first request with this \(Idempotency.header) made its change and is not answered yet: it is still running (retry shortly), or its answer was lost when the server stopped (it is not done again; read the result instead)."
            )
        }
    }
}
