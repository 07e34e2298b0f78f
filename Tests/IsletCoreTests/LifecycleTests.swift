import Foundation
import IsletCore
import Testing

@Suite("Lifecycle rules")
struct LifecycleTests {
    let rules = LifecycleRules()

    @Test func requestStartsActiveAndRecordsStart() throws {
        let (activity, transition) = try Activity.request(
            request(), id: "A", bundleId: "com.example.bike", pushToken: nil, occupancy: roomy, now: t0, rules: rules
        )
        #expect(activity.state == .active)
        #expect(activity.startedAt == t0)
        #expect(activity.autoEndAt == at(8 * hour))
        #expect(transition.types == [.started])
    }

    @Test func futureStartIsPendingUntilItsDate() throws {
        var activity = try started(request(start: at(600), alert: Alert(title: "Soon", body: "Ride starts")))
        #expect(activity.state == .pending)
        #expect(activity.nextDeadline == at(600))

        let early = try activity.handle(.advance, now: at(599), rules: rules)
        #expect(early.payloads.isEmpty)

        let transition = try activity.handle(.advance, now: at(600), rules: rules)
        #expect(activity.state == .active)
        #expect(activity.startedAt == at(600))
        #expect(activity.autoEndAt == at(600 + 8 * hour))
        #expect(transition.stateChanges.map(\.reason) == [.scheduledStart])
        #expect(transition.types == [.stateChanged, .alert])
        #expect(activity.scheduledStart == nil)
        #expect(activity.startAlert == nil)
    }

    @Test func scheduledStartNeedsAnAlert() {
        let error = #expect(throws: IsletError.self) { try started(request(start: at(600))) }
        #expect(error?.reason == .invalidRequest)
    }

    @Test func startInThePastStartsAtOnce() throws {
        let activity = try started(request(start: at(-60)))
        #expect(activity.state == .active)
    }

    @Test func staleDateMakesActivityStale() throws {
        var activity = try started(request(content(1, staleDate: at(300))))
        let transition = try activity.handle(.advance, now: at(301), rules: rules)
        #expect(activity.state == .stale)
        #expect(transition.stateChanges == [StateChange(from: .active, to: .stale, reason: .staleDateReached, at: at(300))])
    }

    @Test func updateWithLaterStaleDateMakesStaleActivityActive() throws {
        var activity = try started(request(content(1, staleDate: at(300))))
        _ = try activity.handle(.advance, now: at(301), rules: rules)
        let transition = try activity.handle(
            .update(ContentUpdate(content: content(2, staleDate: at(900)))), now: at(310), rules: rules
        )
        #expect(activity.state == .active)
        #expect(transition.stateChanges.map(\.reason) == [.contentUpdated])
        #expect(activity.nextDeadline == at(900))
    }

    @Test func updateWithPastStaleDateLeavesActivityStale() throws {
        var activity = try started(request(content(1, staleDate: at(300))))
        _ = try activity.handle(.advance, now: at(301), rules: rules)
        _ = try activity.handle(.update(ContentUpdate(content: content(2, staleDate: at(305)))), now: at(310), rules: rules)
        #expect(activity.state == .stale)
    }

    @Test func contentArrivingAlreadyStaleIsStaleFromItsArrival() throws {
        var activity = try started()
        let transition = try activity.handle(
            .update(ContentUpdate(content: content(2, staleDate: at(100)))), now: at(300), rules: rules
        )
        #expect(activity.state == .stale)
        #expect(transition.stateChanges == [StateChange(from: .active, to: .stale, reason: .staleDateReached, at: at(300))])
    }

    @Test func updateArrivingAfterStaleDateSeesTheStaleStateFirst() throws {
        var activity = try started(request(content(1, staleDate: at(300))))
        let transition = try activity.handle(
            .update(ContentUpdate(content: content(2, staleDate: at(900)))), now: at(400), rules: rules
        )
        #expect(transition.stateChanges.map(\.to) == [.stale, .active])
        #expect(activity.state == .active)
    }

    @Test func activityEndsAfterMaximumActiveDuration() throws {
        var activity = try started()
        _ = try activity.handle(.advance, now: at(8 * hour - 1), rules: rules)
        #expect(activity.state == .active)
        let transition = try activity.handle(.advance, now: at(8 * hour), rules: rules)
        #expect(activity.state == .ended)
        #expect(activity.endedAt == at(8 * hour))
        #expect(activity.dismissAt == at(12 * hour))
        #expect(transition.stateChanges.map(\.reason) == [.maxDurationReached])
    }

    @Test func staleActivityAlsoEndsAfterMaximumActiveDuration() throws {
        var activity = try started(request(content(1, staleDate: at(60))))
        let transition = try activity.handle(.advance, now: at(9 * hour), rules: rules)
        #expect(transition.stateChanges.map(\.to) == [.stale, .ended])
        #expect(activity.state == .ended)
    }

    @Test func systemEndedActivityIsDismissedWithinTwelveHoursOfItsStart() throws {
        var activity = try started()
        let transition = try activity.handle(.advance, now: at(12 * hour), rules: rules)
        #expect(activity.state == .dismissed)
        #expect(activity.dismissedAt == at(12 * hour))
        #expect(transition.stateChanges.map(\.reason) == [.maxDurationReached, .dismissalPolicy])
    }

    @Test func defaultDismissalKeepsEndedActivityForFourHours() throws {
        var activity = try started()
        _ = try activity.handle(.end(EndRequest()), now: at(hour), rules: rules)
        #expect(activity.state == .ended)
        #expect(activity.dismissAt == at(5 * hour))
        _ = try activity.handle(.advance, now: at(5 * hour - 1), rules: rules)
        #expect(activity.state == .ended)
        _ = try activity.handle(.advance, now: at(5 * hour), rules: rules)
        #expect(activity.state == .dismissed)
    }

    @Test func immediateDismissalDismissesAtOnce() throws {
        var activity = try started()
        let transition = try activity.handle(.end(EndRequest(dismissalPolicy: .immediate)), now: at(60), rules: rules)
        #expect(activity.state == .dismissed)
        #expect(transition.stateChanges.map(\.to) == [.ended, .dismissed])
    }

    @Test func dismissalAfterDateUsesThatDate() throws {
        var activity = try started()
        _ = try activity.handle(.end(EndRequest(dismissalPolicy: .after(at(hour)))), now: at(60), rules: rules)
        #expect(activity.dismissAt == at(hour))
    }

    @Test func dismissalAfterDateIsCappedAtFourHours() throws {
        var activity = try started()
        _ = try activity.handle(.end(EndRequest(dismissalPolicy: .after(at(10 * hour)))), now: at(60), rules: rules)
        #expect(activity.dismissAt == at(60 + 4 * hour))
    }

    @Test func dismissalInThePastDismissesAtOnce() throws {
        var activity = try started()
        _ = try activity.handle(.end(EndRequest(dismissalPolicy: .after(at(-10)))), now: at(60), rules: rules)
        #expect(activity.state == .dismissed)
    }

    @Test func dismissalNeverComesLaterThanTheMaximumLifetime() throws {
        var shortLife = LifecycleRules()
        shortLife.maxLifetime = 9 * hour
        var activity = try started(rules: shortLife)
        _ = try activity.handle(.end(EndRequest()), now: at(7 * hour), rules: shortLife)
        #expect(activity.dismissAt == at(9 * hour))
    }

    @Test func olderTimestampIsIgnoredAndRecorded() throws {
        var activity = try started()
        _ = try activity.handle(.update(ContentUpdate(content: content(5), timestamp: at(100))), now: at(100), rules: rules)
        let transition = try activity.handle(
            .update(ContentUpdate(content: content(3), timestamp: at(90))), now: at(101), rules: rules
        )
        #expect(transition.ignored == .olderTimestamp)
        #expect(transition.types == [.updateIgnored])
        #expect(activity.content == content(5))
    }

    @Test func equalTimestampIsApplied() throws {
        var activity = try started()
        _ = try activity.handle(.update(ContentUpdate(content: content(5), timestamp: at(100))), now: at(100), rules: rules)
        let transition = try activity.handle(
            .update(ContentUpdate(content: content(6), timestamp: at(100))), now: at(100), rules: rules
        )
        #expect(transition.ignored == nil)
        #expect(activity.content == content(6))
    }

    @Test func updateWithoutTimestampIsStampedWithArrivalTime() throws {
        var activity = try started()
        _ = try activity.handle(.update(ContentUpdate(content: content(5))), now: at(100), rules: rules)
        #expect(activity.lastUpdateTimestamp == at(100))
    }

    /// Two requests without timestamps read the clock, then reach the store in the other order:
    /// the second to commit carries the earlier time. "No timestamp" means "now", so it applies.
    @Test func updateWithoutTimestampIsNeverOlderThanTheLastApplied() throws {
        var activity = try started()
        _ = try activity.handle(.update(ContentUpdate(content: content(5))), now: at(100.002), rules: rules)
        let transition = try activity.handle(.update(ContentUpdate(content: content(6))), now: at(100.001), rules: rules)
        #expect(transition.ignored == nil)
        #expect(activity.content == content(6))
        #expect(activity.lastUpdateTimestamp == at(100.002))

        let end = try activity.handle(.end(EndRequest(content: content(7))), now: at(100), rules: rules)
        #expect(end.ignored == nil)
        #expect(activity.content == content(7))
        #expect(activity.state == .ended)
    }

    /// A refusal changes nothing, even when deadlines were due: a user's dismissal of an ended
    /// activity whose dismissal time has passed is refused, and the activity is as it was.
    @Test func aRefusedInputChangesNothingEvenWithDeadlinesDue() throws {
        var activity = try started()
        _ = try activity.handle(.end(EndRequest(dismissalPolicy: .after(at(60)))), now: at(10), rules: rules)
        let before = activity
        #expect(throws: IsletError.self) { try activity.handle(.userDismissal, now: at(120), rules: rules) }
        #expect(activity == before)
        // The deadline still takes effect, with its event, when time is simply advanced.
        let advanced = try activity.handle(.advance, now: at(120), rules: rules)
        #expect(activity.state == .dismissed)
        #expect(advanced.stateChanges.map(\.to) == [.dismissed])
    }

    @Test func scheduledStartBeyondTheHorizonIsRefused() {
        let alert = Alert(title: "Soon", body: "Kick-off")
        #expect(throws: Never.self) { try started(request(start: at(rules.maxScheduleLead), alert: alert)) }
        let error = #expect(throws: IsletError.self) {
            try started(request(start: at(rules.maxScheduleLead + 1), alert: alert))
        }
        #expect(error?.reason == .startTooFarAhead)
    }

    @Test func timestampFarInTheFutureIsIgnored() throws {
        var activity = try started()
        let transition = try activity.handle(
            .update(ContentUpdate(content: content(5), timestamp: at(9 * hour))), now: at(10), rules: rules
        )
        #expect(transition.ignored == .timestampTooFarAhead)
        #expect(activity.content == content(1))
    }

    @Test func endedActivityIgnoresUpdates() throws {
        var activity = try started()
        _ = try activity.handle(.end(EndRequest()), now: at(10), rules: rules)
        let transition = try activity.handle(.update(ContentUpdate(content: content(9))), now: at(20), rules: rules)
        #expect(transition.ignored == .activityEnded)
        #expect(activity.content == content(1))
    }

    @Test func dismissedActivityIgnoresUpdatesAndEnds() throws {
        var activity = try started()
        _ = try activity.handle(.end(EndRequest(dismissalPolicy: .immediate)), now: at(10), rules: rules)
        let update = try activity.handle(.update(ContentUpdate(content: content(9))), now: at(20), rules: rules)
        let end = try activity.handle(.end(EndRequest()), now: at(20), rules: rules)
        #expect(update.ignored == .activityDismissed)
        #expect(end.ignored == .activityDismissed)
    }

    @Test func activityPastItsAutomaticEndIgnoresUpdates() throws {
        var activity = try started()
        let transition = try activity.handle(.update(ContentUpdate(content: content(9))), now: at(9 * hour), rules: rules)
        #expect(transition.stateChanges.map(\.reason) == [.maxDurationReached])
        #expect(transition.ignored == .activityEnded)
    }

    @Test func endAppliesFinalContent() throws {
        var activity = try started()
        let transition = try activity.handle(.end(EndRequest(content: content(0))), now: at(10), rules: rules)
        #expect(activity.content == content(0))
        #expect(transition.types == [.contentUpdated, .stateChanged])
    }

    @Test func endWithOlderFinalContentEndsButKeepsContent() throws {
        var activity = try started()
        _ = try activity.handle(.update(ContentUpdate(content: content(5), timestamp: at(100))), now: at(100), rules: rules)
        let transition = try activity.handle(
            .end(EndRequest(content: content(0), timestamp: at(50))), now: at(110), rules: rules
        )
        #expect(activity.state == .ended)
        #expect(activity.content == content(5))
        #expect(transition.types == [.updateIgnored, .stateChanged])
        #expect(transition.ignored == nil)
    }

    @Test func endingPendingActivityDismissesItUnseen() throws {
        var activity = try started(request(start: at(600), alert: Alert(title: "t", body: "b")))
        _ = try activity.handle(.end(EndRequest()), now: at(60), rules: rules)
        #expect(activity.state == .dismissed)
    }

    @Test func alertingUpdateRecordsAnAlert() throws {
        var activity = try started()
        let alert = Alert(title: "Delivered", body: "At your door", sound: "default")
        let transition = try activity.handle(
            .update(ContentUpdate(content: content(2), alert: alert)), now: at(10), rules: rules
        )
        #expect(transition.payloads == [
            .contentUpdated(ContentChange(content: content(2), timestamp: at(10))), .alert(alert),
        ])
    }

    @Test func userDismissalDismissesAtOnce() throws {
        var activity = try started()
        let transition = try activity.handle(.userDismissal, now: at(10), rules: rules)
        #expect(activity.state == .dismissed)
        #expect(transition.stateChanges == [StateChange(from: .active, to: .dismissed, reason: .userDismissed, at: at(10))])
    }

    @Test func userCannotDismissWhatIsNotShownYetOrAlreadyGone() throws {
        var pending = try started(request(start: at(600), alert: Alert(title: "t", body: "b")))
        #expect(throws: IsletError(.activityPending, "A scheduled activity is not shown yet, so it cannot be dismissed; end it instead.")) {
            try pending.handle(.userDismissal, now: at(10), rules: rules)
        }
        var gone = try started()
        _ = try gone.handle(.userDismissal, now: at(10), rules: rules)
        #expect(throws: IgnoreReason.activityDismissed.error) { try gone.handle(.userDismissal, now: at(11), rules: rules) }
    }

    @Test func turningAppOffEndsAndDismissesItsActivities() throws {
        var activity = try started()
        let transition = try activity.handle(.appDisabled, now: at(10), rules: rules)
        #expect(activity.state == .dismissed)
        #expect(transition.stateChanges.map(\.reason) == [.appDisabled, .appDisabled])
        #expect(transition.stateChanges.map(\.to) == [.ended, .dismissed])
    }
}
