import Testing

extension DurabilityTests {
    /// Issue 43, in headless Chromium (Browser/console_webhooks_test.py): the console's Webhooks
    /// page shows each endpoint, whether it is sending, failing (holding at which event) or
    /// disabled, and its attempts with the answer's first bytes; Send a test works from the
    /// keyless console; the page fits 390 points (with ISLET_SCREENSHOTS, saved there).
    @Test(.enabled(if: browserAvailable, "needs chromium, chromium-driver and Python's selenium (.ci/run installs them)"))
    func theConsoleShowsEachWebhookEndpointAndItsAttempts() async throws {
        try await Self.runBrowserScript(script: "console_webhooks_test.py", steps: 3)
    }
}
