import Foundation
import IsletCore
@testable import IsletEngine
import IsletTestSupport
import Testing

/// `Idempotency-Key` in the engine (docs/audiences.md): a request's change holds its key in the
/// change's own transaction, so a request whose answer was lost after its change committed is
/// never done again, and of two requests with one key only the first to commit changes anything.
@Suite("Idempotency keys", .hangDetector)
struct IdempotencyTests {
    private let app: BundleID = "com.example.bike"

    private func decision(_ fixture: EngineFixture, key: String = "k-1", digest: String = "d-1", scope: String? = nil) async throws -> IdempotencyDecision {
        try await fixture.engine.claimIdempotencyKey(scope: scope ?? "app:\(app)", key: key, digest: digest)
    }

    private func proceed(_ decision: IdempotencyDecision) -> IdempotencyClaim? {
        if case .proceed(let claim) = decision { return claim }
        return nil
    }

    private func reason(_ body: () async throws -> Void) async -> ErrorReason? {
        do {
            try await body()
            return nil
        } catch let refusal as IsletError {
            return refusal.reason
        } catch {
            return .internalError
        }
    }

    private func rides(_ fixture: EngineFixture) async throws -> Int {
        try await fixture.engine.activities(ActivityFilter(bundleId: app, limit: 10)).items.count
    }

    @Test(arguments: StoreKind.available) func aChangeMadeUnderAKeyIsNeverMadeAgain(store: StoreKind) async throws {
        try await EngineFixture.with(store, apps: [app]) { fixture in
            // Two requests with one key at once: both may run, only the first to commit changes anything.
            let first = try #require(proceed(try await decision(fixture)))
            let second = try #require(proceed(try await decision(fixture)))
            _ = try await IdempotencyClaim.$current.withValue(first) { try await fixture.engine.start(ride(1), bundleId: app) }
            #expect(await reason { _ = try await IdempotencyClaim.$current.withValue(second) { try await fixture.engine.start(ride(1), bundleId: app) } } == .idempotencyKeyInUse)
            // The first's answer is lost: the server stops before sending it.
            try await fixture.restart()
            fixture.clock.set(at(3_600))
            #expect(await reason { _ = try await decision(fixture) } == .idempotencyKeyInUse, "it is not done again")
            #expect(try await rides(fixture) == 1)
        }
    }

    @Test func anAnsweredKeyIsReplayedForItsRequestOnlyAndForADay() async throws {
        try await EngineFixture.with(apps: [app]) { fixture in
            // A request that changed nothing and was never answered (its node stopped): a retry runs.
            _ = try #require(proceed(try await decision(fixture)))
            let claim = try #require(proceed(try await decision(fixture)))
            _ = try await IdempotencyClaim.$current.withValue(claim) { try await fixture.engine.start(ride(1), bundleId: app) }
            // A change of the same request again holds the key it already holds.
            _ = try await IdempotencyClaim.$current.withValue(claim) { try await fixture.engine.start(ride(2), bundleId: app) }
            try await fixture.engine.answerIdempotencyKey(claim, status: 201, contentType: "application/json", body: #"{"id":"x"}"#)
            guard case .replay(let kept) = try await decision(fixture) else { Issue.record("answered once, replayed after"); return }
            #expect(kept.status == 201 && kept.body == #"{"id":"x"}"#)
            #expect(await reason { _ = try await decision(fixture, digest: "d-2") } == .idempotencyKeyReused)
            #expect(proceed(try await decision(fixture, digest: "d-2", scope: "admin")) != nil, "keys are per caller")
            #expect(await reason { _ = try await decision(fixture, key: "has space") } == .invalidRequest)
            // A day later the key is forgotten and may be used again.
            fixture.clock.set(at(Idempotency.lifetime + 100))
            #expect(proceed(try await decision(fixture, digest: "d-3")) != nil)
        }
    }
}
