import Foundation
import IsletCore
import Testing

/// Where an activity shows, and for how long after its end (docs/surfaces.md): time moves by
/// hand through the lifecycle's own rules.
@Suite("Surfaces")
struct SurfaceTests {
    let rules = LifecycleRules()

    @Test func aRunningActivityShowsEverywhere() throws {
        let activity = try started()
        #expect(Surface.showing(activity, at: at(60)) == Surface.allCases)
    }

    @Test func anEndedActivityLeavesTheIslandAndCarPlayAtOnceAndStaysOnTheOthers() throws {
        var activity = try started()
        _ = try activity.handle(.end(EndRequest()), now: at(hour), rules: rules)
        #expect(Surface.showing(activity, at: at(hour)) == [.lockScreen, .watch, .mac, .ipad, .standby])
    }

    @Test func theWatchAndTheMacKeepAnEndedActivityAsLongAsTheLockScreen() throws {
        var activity = try started()
        _ = try activity.handle(.end(EndRequest()), now: at(hour), rules: rules)
        // Up to four hours after the end; not a second more, even before the scheduler dismisses it.
        #expect(Surface.watch.shows(activity, at: at(5 * hour - 1)))
        #expect(Surface.mac.shows(activity, at: at(5 * hour - 1)))
        #expect(Surface.showing(activity, at: at(5 * hour)) == [])
        _ = try activity.handle(.advance, now: at(5 * hour), rules: rules)
        #expect(Surface.showing(activity, at: at(5 * hour)) == [])
    }

    @Test func theDismissalPolicysDateEndsItEverywhere() throws {
        var activity = try started()
        _ = try activity.handle(.end(EndRequest(dismissalPolicy: .after(at(hour + 600)))), now: at(hour), rules: rules)
        #expect(Surface.showing(activity, at: at(hour + 599)) == [.lockScreen, .watch, .mac, .ipad, .standby])
        #expect(Surface.showing(activity, at: at(hour + 600)) == [])
    }

    @Test func aPendingActivityShowsNowhere() throws {
        let activity = try started(request(start: at(hour), alert: Alert(title: "Soon", body: "Soon")))
        #expect(activity.state == .pending)
        #expect(Surface.showing(activity, at: at(60)) == [])
    }

    @Test func onlyTheWatchAndCarPlayDrawTheSmallFamily() {
        #expect(Surface.allCases.filter { $0.content == .small } == [.watch, .carplay])
        #expect(Surface.allCases.filter { !$0.hasLightAppearance } == [.dynamicIsland, .watch, .carplay])
    }

    @Test func sizesAreApples() {
        #expect(Surface.watch.sizes.map { "\($0.name) \($0.width)×\($0.height ?? 0)" } == ["49mm 191.0×81.5", "40mm 152.0×69.5"])
        #expect(Surface.carplay.sizes.map(\.name) == ["240x78", "240x100", "170x78"])
        #expect(Surface.carplay.size(named: "170x78")?.width == 170)
        #expect(Surface.ipad.size(named: nil)?.width == 500)
        #expect(Surface.standby.size(named: nil).map { [$0.width, $0.height ?? 0] } == [852, 393])
        #expect(Surface.watch.size(named: "45mm") == nil)
    }
}
