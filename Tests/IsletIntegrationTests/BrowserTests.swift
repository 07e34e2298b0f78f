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
        try await Self.runBrowserScript(steps: 18, timeout: 180)
    }

    /// SwiftUI's sizing on the live display: a linear ProgressView in an HStack takes the room
    /// left, text beside the camera is one truncated line, the expanded bottom's progress spans
    /// the island, an alert's banner covers the clock, and a label beside a long value stays whole.
    @Test(.enabled(if: browserAvailable, "needs chromium, chromium-driver and Python's selenium (.ci/run installs them)"))
    func viewsAreSizedAsSwiftUISizesThem() async throws {
        try await Self.runBrowserScript("sizing", steps: 5)
    }

    /// Every place an activity shows, beside the phone (docs/surfaces.md): the ride, the build and
    /// the countdown with and without a `small` region, each surface's frame at Apple's size; after
    /// an end CarPlay and the island drop the card and the others keep it; an alert on the watch;
    /// several activities; the panel's Surfaces choice. With ISLET_SCREENSHOTS=docs/screenshots it saves each surface.
    @Test(.enabled(if: browserAvailable, "needs chromium, chromium-driver and Python's selenium (.ci/run installs them)"))
    func theDisplayDrawsEverySurfaceFromTheSameLayouts() async throws {
        try await Self.runBrowserScript(script: "surfaces_test.py", steps: 12, timeout: 240)
    }

    /// Listening beyond loopback, the display needs its device's key, given once in the address.
    @Test(.enabled(if: browserAvailable, "needs chromium, chromium-driver and Python's selenium (.ci/run installs them)"))
    func offLoopbackTheDisplayNeedsItsDevicesKey() async throws {
        try await Self.runBrowserScript("keys", steps: 4, server: ["ISLET_SERVER_HOST": "0.0.0.0"])
    }

    /// The Scripting app's example flow through `/islet.js` in a page, seen on the display.
    @Test(.enabled(if: browserAvailable, "needs chromium, chromium-driver and Python's selenium (.ci/run installs them)"))
    func isletJSRunsTheScriptingAppsFlow() async throws {
        // A page of one's own, served from the server's pages directory.
        let pages = DataDirectory()
        try FileManager.default.createDirectory(at: pages.url, withIntermediateDirectories: true)
        try #"<!doctype html><title>My activity</title><script src="/islet.js"></script><p>Mine</p>"#
            .write(to: pages.url.appendingPathComponent("index.html"), atomically: true, encoding: .utf8)
        try await Self.runBrowserScript("islet-js", steps: 4, server: ["ISLET_SERVER_PAGES": pages.path])
    }

    /// A page on another origin opens the keyless display's WebSocket, posts a dismissal with
    /// `no-cors` and with a form, reads the snapshot and puts settings: it reads nothing and
    /// changes nothing, and the display on its own origin still works.
    @Test(.enabled(if: browserAvailable, "needs chromium, chromium-driver and Python's selenium (.ci/run installs them)"))
    func anotherSitesPageCannotReadOrDriveTheDisplay() async throws {
        try await Self.runBrowserScript("cross-site", script: "attack_test.py", steps: 3)
    }

    /// DNS rebinding: the display reached as evil.example (mapped to 127.0.0.1) refuses to
    /// show or change anything, though the browser treats the page as same-origin.
    @Test(.enabled(if: browserAvailable, "needs chromium, chromium-driver and Python's selenium (.ci/run installs them)"))
    func theDisplayUnderAnotherNameRefusesEverything() async throws {
        try await Self.runBrowserScript("rebinding", script: "attack_test.py", steps: 2)
    }

    /// Hostile text (script tags, event handlers, `javascript:` links, template syntax) in every
    /// field a producer controls, and a date of 1e300, are shown as text; no script runs.
    @Test(.enabled(if: browserAvailable, "needs chromium, chromium-driver and Python's selenium (.ci/run installs them)"))
    func hostileTextIsShownAndNeverRuns() async throws {
        try await Self.runBrowserScript("xss", script: "attack_test.py", steps: 1)
    }

    /// An Android phone on the display, driven by Google's own FCM client: firebase-admin with
    /// the service account Islet issued sends a start, updates and an end that the phone shows as
    /// a Live Update (ProgressStyle, the status bar's chip), says why a notification is not
    /// promoted, drops an older message, and answers an unknown token UNREGISTERED.
    @Test(.enabled(
        if: browserAvailable && pythonHas("firebase_admin", requiredBy: "ISLET_REQUIRE_PYTHON_PROVIDER"),
        "needs chromium, chromium-driver, selenium and firebase-admin (.ci/run installs them)"
    ))
    func anAndroidPhoneShowsWhatFirebaseAdminSends() async throws {
        try await Self.runBrowserScript(script: "android_test.py", steps: 7)
    }

    /// Runs one part of a script in `Browser/` (`display_test.py` unless told) against a fresh
    /// `islet serve` (with `server` in its environment) and expects it to pass with `steps`
    /// checked steps ("ok: " lines).
    static func runBrowserScript(
        _ part: String? = nil, script name: String = "display_test.py", steps: Int, server environment: [String: String] = [:],
        timeout: Double = 120
    ) async throws {
        let data = DataDirectory()
        let server = try await ServerProcess(data: data, environment: environment)
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Browser/\(name)")
        let (status, stdout, stderr) = try await runPython(
            script, arguments: part.map { [$0] } ?? [],
            environment: [
                "ISLET_URL": server.url, "ISLET_ADMIN_KEY": data.adminKey, "PYTHONUNBUFFERED": "1",
                "ISLET_PUSH_URL": server.apnsPort.map { "https://127.0.0.1:\($0)" } ?? "",
                "ISLET_CA": data.url.appendingPathComponent("tls/ca.pem").path,
            ].merging(ProcessInfo.processInfo.environment.filter { $0.key == "ISLET_SCREENSHOTS" }) { first, _ in first },
            timeout: timeout
        )
        #expect(status == 0, "\(name) \(part ?? "") failed:\n\(stdout)\(stderr)")
        #expect(stdout.split(separator: "\n").filter { $0.hasPrefix("ok: ") }.count == steps, "\(stdout)\(stderr)")
        await server.stop(signal: SIGTERM)
    }
}
