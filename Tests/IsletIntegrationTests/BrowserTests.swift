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
    /// swipe, truncation, timers that tick by themselves, settings, appearance and a second device — each checked on the page.
    @Test(.enabled(if: browserAvailable, "needs chromium, chromium-driver and Python's selenium (.ci/run installs them)"))
    func theDisplayShowsWhatProducersDoAsItHappens() async throws {
        let data = DataDirectory()
        let server = try await ServerProcess(data: data)
        let (status, stdout, stderr) = try await runPython(
            Self.displayScript, environment: ["ISLET_URL": server.url, "ISLET_ADMIN_KEY": data.adminKey, "PYTHONUNBUFFERED": "1"], timeout: 180
        )
        let text = stdout + stderr
        #expect(status == 0, "the display test failed:\n\(text)")
        #expect(stdout.split(separator: "\n").filter { $0.hasPrefix("ok: ") }.count == 16, "\(text)")
        await server.stop(signal: SIGTERM)
    }

    /// Listening beyond loopback, the display needs its device's key, given once in the address.
    @Test(.enabled(if: browserAvailable, "needs chromium, chromium-driver and Python's selenium (.ci/run installs them)"))
    func offLoopbackTheDisplayNeedsItsDevicesKey() async throws {
        let data = DataDirectory()
        let server = try await ServerProcess(data: data, environment: ["ISLET_SERVER_HOST": "0.0.0.0"])
        let (status, stdout, stderr) = try await runPython(
            Self.displayScript, arguments: ["keys"],
            environment: ["ISLET_URL": server.url, "ISLET_ADMIN_KEY": data.adminKey, "PYTHONUNBUFFERED": "1"], timeout: 120
        )
        #expect(status == 0, "the display test failed:\n\(stdout)\(stderr)")
        #expect(stdout.split(separator: "\n").filter { $0.hasPrefix("ok: ") }.count == 4, "\(stdout)\(stderr)")
        await server.stop(signal: SIGTERM)
    }

    /// The Scripting app's example flow through `/islet.js` in a page, seen on the display.
    @Test(.enabled(if: browserAvailable, "needs chromium, chromium-driver and Python's selenium (.ci/run installs them)"))
    func isletJSRunsTheScriptingAppsFlow() async throws {
        let data = DataDirectory()
        let server = try await ServerProcess(data: data)
        let (status, stdout, stderr) = try await runPython(
            Self.displayScript, arguments: ["islet-js"],
            environment: ["ISLET_URL": server.url, "ISLET_ADMIN_KEY": data.adminKey, "PYTHONUNBUFFERED": "1"], timeout: 120
        )
        #expect(status == 0, "the islet.js test failed:\n\(stdout)\(stderr)")
        #expect(stdout.split(separator: "\n").filter { $0.hasPrefix("ok: ") }.count == 3, "\(stdout)\(stderr)")
        await server.stop(signal: SIGTERM)
    }

    static let displayScript = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Browser/display_test.py")
}
