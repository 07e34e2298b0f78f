import Testing

extension DurabilityTests {
    /// Issue 27, in headless Chromium (Browser/console_warnings_test.py): an activity whose state
    /// does not fit its layout says so on its timeline — the event's warnings beside its card,
    /// each region and the place in the layout that reads the value, and the card as it stands
    /// at the top, live — readable at 1280 and 390 points (with ISLET_SCREENSHOTS, saved there).
    @Test(.enabled(if: browserAvailable, "needs chromium, chromium-driver and Python's selenium (.ci/run installs them)"))
    func theTimelineSaysWhatAStateLacksForItsLayout() async throws {
        try await Self.runBrowserScript(script: "console_warnings_test.py", steps: 2)
    }
}
