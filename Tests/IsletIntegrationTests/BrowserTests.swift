import Foundation
import IsletTestSupport
import Testing

/// Whether the display can be tested in a browser here: Debian's `chromium` and
/// `chromium-driver`, and Python's `selenium` (`.ci/run` installs all three; set
/// ISLET_REQUIRE_BROWSER to make their absence a failure rather than a skip).
let browserAvailable =
    FileManager.default.isExecutableFile(atPath: ProcessInfo.processInfo.environment["ISLET_CHROMEDRIVER"] ?? "/usr/bin/chromedriver")
        && pythonHas("selenium", requiredBy: "ISLET_REQUIRE_BROWSER")
        || ProcessInfo.processInfo.environment["ISLET_REQUIRE_BROWSER"] != nil

extension DurabilityTests {
    /// The web display in headless Chromium against the real `islet serve`: start, update,
    /// relevance order, island modes, alert banner, stale mark, end, dismissal by button and by
    /// swipe, truncation, timers that tick by themselves, settings, appearance and a second
    /// device — each checked on the page.
    @Test(.enabled(if: browserAvailable, "needs chromium, chromium-driver and Python's selenium (.ci/run installs them)"))
    func theDisplayShowsWhatProducersDoAsItHappens() async throws {
        try await Self.runBrowserScript(steps: 17, timeout: 180)
    }

    /// Listening beyond loopback, the display needs its device's key, given once in the address.
    @Test(.enabled(if: browserAvailable, "needs chromium, chromium-driver and Python's selenium (.ci/run installs them)"))
    func offLoopbackTheDisplayNeedsItsDevicesKey() async throws {
        try await Self.runBrowserScript("keys", steps: 4, server: ["ISLET_SERVER_HOST": "0.0.0.0"])
    }

    /// The Scripting app's example flow through `/islet.js` in a page, seen on the display.
    @Test(.enabled(if: browserAvailable, "needs chromium, chromium-driver and Python's selenium (.ci/run installs them)"))
    func isletJSRunsTheScriptingAppsFlow() async throws {
        try await Self.runBrowserScript("islet-js", steps: 3)
    }

    /// Runs one part of `Browser/display_test.py` against a fresh `islet serve` (with `server`
    /// in its environment) and expects it to pass with `steps` checked steps ("ok: " lines).
    static func runBrowserScript(
        _ part: String? = nil, steps: Int, server environment: [String: String] = [:], timeout: Double = 120
    ) async throws {
        let data = DataDirectory()
        let server = try await ServerProcess(data: data, environment: environment)
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Browser/display_test.py")
        let (status, stdout, stderr) = try await runPython(
            script, arguments: part.map { [$0] } ?? [],
            environment: ["ISLET_URL": server.url, "ISLET_ADMIN_KEY": data.adminKey, "PYTHONUNBUFFERED": "1"], timeout: timeout
        )
        #expect(status == 0, "display_test.py \(part ?? "") failed:\n\(stdout)\(stderr)")
        #expect(stdout.split(separator: "\n").filter { $0.hasPrefix("ok: ") }.count == steps, "\(stdout)\(stderr)")
        await server.stop(signal: SIGTERM)
    }
}
