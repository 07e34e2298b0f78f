import Testing

extension DurabilityTests {
    /// Issue 44, in headless Chromium (Browser/console_sends_test.py): the console's Sends page
    /// shows each send newest first, how far it has got, and the phones it could not reach with
    /// ActivityKit's reason; Cancel works from the keyless console and takes a start's end with
    /// it; the page fits 390 points (with ISLET_SCREENSHOTS, saved there).
    @Test(.enabled(if: browserAvailable, "needs chromium, chromium-driver and Python's selenium (.ci/run installs them)"))
    func theConsoleShowsEachSendAndCancelsAScheduledOne() async throws {
        try await Self.runBrowserScript(script: "console_sends_test.py", steps: 4)
    }

    /// Issue 59, in headless Chromium (Browser/console_installations_test.py): the console's
    /// Installations page lists the phones that registered with a client key, newest first, with
    /// their user and what each reported — no token whole to the keyless console; it fits 390
    /// points.
    @Test(.enabled(if: browserAvailable, "needs chromium, chromium-driver and Python's selenium (.ci/run installs them)"))
    func theConsoleShowsEachInstallationAndWhatItReported() async throws {
        try await Self.runBrowserScript(script: "console_installations_test.py", steps: 3)
    }
}
