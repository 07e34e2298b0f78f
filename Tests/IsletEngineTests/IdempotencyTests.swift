import Foundation
import IsletCore
@testable import IsletEngine
import Testing

/// `Idempotency-Key` in the engine (docs/audiences.md): a request's change marks its key in the
/// change's own transaction, so a request whose answer was lost after its change committed is
/// never done again; one that changed nothing may be taken over once its hold runs out.
@Suite("Idempotency keys")
struct IdempotencyTests {
    private let app: BundleID = "com.example.bike"

    private func decision(_ fixture: EngineFixture, key: String = "k-1", digest: String = "d-1") async throws -> IdempotencyDecision {
        try await fixture.engine.claimIdempotencyKey(scope: "app:\(app)", key: key, digest: digest)
    }

    @Test(arguments: StoreKind.available) func aChangeMadeUnderAKeyIsNeverMadeAgain(store: StoreKind) async throws {
        try await EngineFixture.with(store, apps: [app]) { fixture in
            guard case .proceed(let claim) = try await decision(fixture) else { Issue.record("the first request runs"); return }
            // While it runs, the key is held.
            await #expect(throws: IsletError.self) { try await decision(fixture) }
            // Its change commits, marking the key; then the server stops before answering.
            _ = try await IdempotencyClaim.$current.withValue(claim) { try await fixture.engine.start(ride(1), bundleId: app) }
            try await fixture.restart()
            fixture.clock.set(at(3_600))
            do {
                _ = try await decision(fixture)
                Issue.record("a retry after the change committed must not run")
            } catch let refusal as IsletError {
                #expect(refusal.reason == .idempotencyKeyInUse)
            }
            #expect(try await fixture.engine.activities(ActivityFilter(bundleId: app, limit: 10)).items.count == 1)
        }
    }

    @Test func aRequestThatChangedNothingIsTakenOverOnceItsHoldRunsOut() async throws {
        try await EngineFixture.with(apps: [app]) { fixture in
            guard case .proceed = try await decision(fixture) else { Issue.record("the first request runs"); return }
            fixture.clock.set(at(Idempotency.lease - 1))
            await #expect(throws: IsletError.self) { try await decision(fixture) }
            fixture.clock.set(at(Idempotency.lease + 1))
            guard case .proceed(let claim) = try await decision(fixture) else { Issue.record("taken over"); return }
            try await fixture.engine.answerIdempotencyKey(claim, status: 201, contentType: "application/json", body: #"{"id":"x"}"#)
            guard case .replay(let kept) = try await decision(fixture) else { Issue.record("answered once, replayed after"); return }
            #expect(kept.status == 201 && kept.body == #"{"id":"x"}"#)
            // Another request under the key is refused; another caller's key of the same name is its own.
            await #expect(throws: IsletError.self) { try await decision(fixture, digest: "d-2") }
            guard case .proceed = try await fixture.engine.claimIdempotencyKey(scope: "admin", key: "k-1", digest: "d-2") else {
                Issue.record("keys are per caller")
                return
            }
            // A day later the key is forgotten and may be used again.
            fixture.clock.set(at(Idempotency.lifetime + 100))
            guard case .proceed = try await decision(fixture, digest: "d-3") else { Issue.record("a day later, a new request"); return }
        }
    }

    @Test func aFailedRequestLetsItsKeyGoUnlessItChangedSomething() async throws {
        try await EngineFixture.with(apps: [app]) { fixture in
            guard case .proceed(let first) = try await decision(fixture) else { return }
            try await fixture.engine.releaseIdempotencyKey(first)
            guard case .proceed(let second) = try await decision(fixture) else { Issue.record("released: runs again"); return }
            _ = try await IdempotencyClaim.$current.withValue(second) { try await fixture.engine.start(ride(1), bundleId: app) }
            try await fixture.engine.releaseIdempotencyKey(second)
            await #expect(throws: IsletError.self, "it changed something: kept") { try await decision(fixture) }
            await #expect(throws: IsletError.self) { try await fixture.engine.claimIdempotencyKey(scope: "admin", key: "has space", digest: "d") }
        }
    }
}
