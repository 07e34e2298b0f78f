import Foundation
import IsletCore

/// A request's hold on its `Idempotency-Key` while it runs: each change the engine writes for it
/// marks the key applied in the change's own transaction (`Engine.write`), so a request whose
/// answer is lost after its change committed is never done again.
public struct IdempotencyClaim: Sendable, Hashable {
    public let scope: String
    public let key: String

    /// The claim of the request this task serves, if it gave a key.
    @TaskLocal public static var current: IdempotencyClaim?
}

/// What to do with a request that gave an `Idempotency-Key`.
public enum IdempotencyDecision: Sendable {
    /// Run it, holding the key.
    case proceed(IdempotencyClaim)
    /// Answer what the first request with the key was answered.
    case replay(IdempotencyRecord)
}

extension Engine {
    // MARK: Idempotency-Key (docs/audiences.md)

    /// Takes a caller's key for a request (its digest), or says what was answered for it: the
    /// same key with another request is `idempotencyKeyReused`; one whose first request still
    /// runs, or changed what it asked for without being answered, `idempotencyKeyInUse`. A key
    /// whose first request's node stopped before it changed anything is taken over.
    public func claimIdempotencyKey(scope: String, key: String, digest: String) async throws -> IdempotencyDecision {
        try Idempotency.check(key)
        return try await write { tx in
            // Keys older than a day are forgotten a few at a time, as new ones come.
            _ = try tx.purgeIdempotencyRecords(before: tx.now.addingTimeInterval(-Idempotency.lifetime), limit: 20)
            if let kept = try tx.idempotencyRecord(scope: scope, key: key), kept.createdAt > tx.now.addingTimeInterval(-Idempotency.lifetime) {
                guard kept.digest == digest else {
                    throw IsletError(
                        .idempotencyKeyReused,
                        "This \(Idempotency.header) was used for another request (another method, path or body) in the last 24 hours; use a new key for a new request."
                    )
                }
                switch kept.state {
                case .answered:
                    return .replay(kept)
                case .applied:
                    throw IsletError(
                        .idempotencyKeyInUse,
                        "The first request with this \(Idempotency.header) made its change, but its answer was lost (the server stopped before sending it); it is not done again. Read the result instead."
                    )
                case .started where kept.heldUntil > tx.now:
                    throw IsletError(.idempotencyKeyInUse, "A request with this \(Idempotency.header) is still running; try again once it is answered.")
                case .started:
                    break
                }
            }
            try tx.putIdempotencyRecord(IdempotencyRecord(
                scope: scope, key: key, digest: digest, state: .started, createdAt: tx.now, heldUntil: tx.now.addingTimeInterval(Idempotency.lease)
            ))
            return .proceed(IdempotencyClaim(scope: scope, key: key))
        }
    }

    /// Keeps the answer to a claimed key's request: a retry gets it.
    public func answerIdempotencyKey(_ claim: IdempotencyClaim, status: Int, contentType: String?, body: String) async throws {
        try await write { tx in
            guard var kept = try tx.idempotencyRecord(scope: claim.scope, key: claim.key) else { return }
            kept.state = .answered
            kept.status = status
            kept.contentType = contentType
            kept.body = body
            try tx.putIdempotencyRecord(kept)
        }
    }

    /// Lets a claimed key go after the server failed its request (5xx): a retry runs it again,
    /// unless it had made its change.
    public func releaseIdempotencyKey(_ claim: IdempotencyClaim) async throws {
        try await write { tx in
            guard let kept = try tx.idempotencyRecord(scope: claim.scope, key: claim.key), kept.state == .started else { return }
            try tx.deleteIdempotencyRecord(scope: claim.scope, key: claim.key)
        }
    }
}
