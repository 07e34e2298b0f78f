import Foundation
import IsletCore
import Testing

@Suite("Request rules")
struct RequestRulesTests {
    let rules = LifecycleRules()

    func refusal(_ request: ActivityRequest, occupancy: Occupancy = roomy, rules: LifecycleRules = LifecycleRules())
        -> ErrorReason?
    {
        do {
            _ = try Activity.request(
                request, id: "A", bundleId: "com.example.bike", pushToken: nil, occupancy: occupancy, now: t0, rules: rules
            )
            return nil
        } catch {
            return error.reason
        }
    }

    @Test func disabledAppIsDenied() {
        #expect(refusal(request(), occupancy: Occupancy(activitiesEnabled: false, appActivities: 0, deviceActivities: 0)) == .denied)
    }

    @Test func aStaleDateNoClientCouldSendIsRefusedFromSwiftToo() {
        for stale: Double in [.nan, -1, 1e300, -.infinity] {
            #expect(refusal(request(ActivityContent(state: [:], staleDate: Date(timeIntervalSince1970: stale)))) == .invalidRequest, "\(stale)")
        }
        #expect(refusal(request(ActivityContent(state: [:], staleDate: .distantFuture))) == nil)
    }

    @Test func attributesAndStateOverFourKilobytesAreTooLarge() {
        let big = String(repeating: "x", count: 4000)
        #expect(refusal(request(ActivityContent(state: ["note": .string(big)]), attributes: ["more": .string(String(repeating: "y", count: 100))])) == .attributesTooLarge)
    }

    @Test func payloadExactlyAtTheLimitIsAccepted() {
        // {"n":"…"} is 8 bytes of framing; {} is 2.
        let state = ActivityContent(state: ["n": .string(String(repeating: "x", count: 4096 - 8 - 2))])
        #expect(refusal(request(state, attributes: [:])) == nil)
        let over = ActivityContent(state: ["n": .string(String(repeating: "x", count: 4096 - 8 - 1))])
        #expect(refusal(request(over, attributes: [:])) == .attributesTooLarge)
    }

    @Test func updateOverTheLimitIsRefusedAndChangesNothing() throws {
        var activity = try started()
        let before = activity
        #expect(throws: IsletError.self) {
            try activity.handle(
                .update(ContentUpdate(content: ActivityContent(state: ["n": .string(String(repeating: "x", count: 5000))]))),
                now: at(1), rules: rules
            )
        }
        #expect(activity == before)
    }

    @Test func appAtItsLimitGetsTargetMaximumExceeded() {
        let full = Occupancy(activitiesEnabled: true, appActivities: 5, deviceActivities: 5)
        #expect(refusal(request(), occupancy: full) == .targetMaximumExceeded)
    }

    @Test func deviceAtItsLimitGetsGlobalMaximumExceeded() {
        let full = Occupancy(activitiesEnabled: true, appActivities: 0, deviceActivities: 10)
        #expect(refusal(request(), occupancy: full) == .globalMaximumExceeded)
    }

    @Test func limitsAreSettings() {
        var generous = LifecycleRules()
        generous.maxActivitiesPerApp = 50
        generous.maxActivitiesPerDevice = 100
        let busy = Occupancy(activitiesEnabled: true, appActivities: 20, deviceActivities: 60)
        #expect(refusal(request(), occupancy: busy, rules: generous) == nil)
    }

    @Test func contentStateMustBeAnObject() {
        #expect(refusal(request(ActivityContent(state: .array([1, 2])))) == .invalidRequest)
        #expect(refusal(request(attributes: "text")) == .invalidRequest)
    }

    @Test func tokenPushTypeIssuesTheToken() throws {
        let (activity, transition) = try Activity.request(
            request(pushType: .token), id: "A", bundleId: "b", pushToken: "ab12", occupancy: roomy, now: t0, rules: rules
        )
        #expect(activity.pushToken == "ab12")
        #expect(transition.types == [.started, .pushTokenUpdated])
    }

    @Test func noPushTypeMeansNoToken() throws {
        let (activity, _) = try Activity.request(
            request(), id: "A", bundleId: "b", pushToken: "ab12", occupancy: roomy, now: t0, rules: rules
        )
        #expect(activity.pushToken == nil)
    }

    @Test func startWithAlertAlertsAtOnce() throws {
        let (_, transition) = try Activity.request(
            request(alert: Alert(title: "Go", body: "Ride started")), id: "A", bundleId: "b", pushToken: nil,
            occupancy: roomy, now: t0, rules: rules
        )
        #expect(transition.types == [.started, .alert])
    }

    @Test func startWithPastStaleDateIsStaleAtOnce() throws {
        let activity = try started(request(content(1, staleDate: at(-1))))
        #expect(activity.state == .stale)
    }
}
