import NIOCore
import IsletTestSupport
import Testing

@testable import IsletServer

/// The phases of an HTTP/1.1 connection and their deadlines, with time passed by hand.
@Suite("Inbound deadlines", .hangDetector)
struct InboundDeadlinesTests {
    let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)

    func deadlines() -> InboundDeadlines {
        InboundDeadlines(limits: RequestGuardTests.limits, connectedAt: t0)
    }

    @Test func theFirstHeadIsDueAfterTheHeadTimeout() {
        #expect(deadlines().deadline == t0 + .seconds(10))
    }

    @Test func readsExtendABodyByTheirSizeOnlyNeverRestartIt() {
        var phases = deadlines()
        phases.headReceived(at: t0)
        #expect(phases.deadline == t0 + .seconds(20))
        phases.bodyReceived(1)
        phases.bodyReceived(1)
        // Two bytes at 500 bytes a second: 4 ms, however late they came.
        #expect(phases.deadline == t0 + .seconds(20) + .milliseconds(4))
        phases.bodyReceived(5000)
        #expect(phases.deadline == t0 + .seconds(30) + .milliseconds(4))
    }

    @Test func bytesBeyondTheBodyLimitBuyNoTime() {
        var phases = deadlines()
        phases.headReceived(at: t0)
        phases.bodyReceived(10 * 64 * 1024)
        #expect(phases.deadline == t0 + .seconds(20) + .nanoseconds(64 * 1024 * 1_000_000_000 / 500))
    }

    @Test func noDeadlineRunsWhileTheServerAnswers() {
        var phases = deadlines()
        phases.headReceived(at: t0)
        phases.requestEnded(at: t0 + .seconds(1))
        #expect(phases.deadline == nil)
        #expect(!phases.hasExpired(at: t0 + .hours(24)))
    }

    @Test func theNextHeadIsDueAnIdleTimeoutAfterTheLastResponse() {
        var phases = deadlines()
        phases.headReceived(at: t0)
        phases.requestEnded(at: t0)
        phases.responseEnded(at: t0 + .seconds(5))
        #expect(phases.phase == .head(since: t0 + .seconds(5), first: false))
        #expect(phases.deadline == t0 + .seconds(65))
    }

    @Test func aPipelinedRequestWaitsForEveryAnswer() {
        var phases = deadlines()
        phases.headReceived(at: t0)
        phases.requestEnded(at: t0)
        phases.headReceived(at: t0)
        phases.requestEnded(at: t0)
        phases.responseEnded(at: t0 + .seconds(1))
        #expect(phases.deadline == nil)
        phases.responseEnded(at: t0 + .seconds(2))
        #expect(phases.deadline == t0 + .seconds(62))
    }

    @Test func aBodyStillDueAfterAnEarlyAnswerKeepsItsDeadline() {
        var phases = deadlines()
        // A 401 answered from the head alone; the body must still arrive, then the next head.
        phases.headReceived(at: t0)
        phases.responseEnded(at: t0 + .seconds(1))
        #expect(phases.deadline == t0 + .seconds(20))
        phases.requestEnded(at: t0 + .seconds(3))
        #expect(phases.deadline == t0 + .seconds(63))
    }
}
