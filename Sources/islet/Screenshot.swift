import ArgumentParser
import Foundation

/// PNGs of HTML pages through a headless Chromium, at the iPhone's 3× scale.
enum Screenshot {
    /// The browsers tried, in order; `ISLET_CHROMIUM` names another.
    static let browsers = ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"]

    static func browser() -> String? {
        if let named = ProcessInfo.processInfo.environment["ISLET_CHROMIUM"], !named.isEmpty { return named }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for name in browsers {
            for directory in path.split(separator: ":") {
                let candidate = "\(directory)/\(name)"
                if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            }
        }
        return nil
    }

    /// Writes `html` as a PNG `width` points wide (an iPhone's 393 unless told) and `height` tall to `path`.
    static func png(html: String, width: Int = 393, height: Int, to path: String, scale: Int = 3) throws {
        guard let browser = browser() else {
            throw CommandFailure(
                "A PNG needs a headless Chromium, and none was found (tried \(browsers.joined(separator: ", ")); set ISLET_CHROMIUM). Write .html instead, or install one: apt-get install chromium"
            )
        }
        let page = FileManager.default.temporaryDirectory.appendingPathComponent("islet-render-\(UUID().uuidString).html")
        try html.write(to: page, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: page) }
        let output = URL(fileURLWithPath: path).standardizedFileURL
        let process = Process()
        process.executableURL = URL(fileURLWithPath: browser)
        process.arguments = [
            "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
            "--force-device-scale-factor=\(scale)", "--window-size=\(width),\(height)",
            "--virtual-time-budget=1500", "--screenshot=\(output.path)", page.absoluteString,
        ]
        let errors = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errors
        try process.run()
        let messages = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0, FileManager.default.fileExists(atPath: output.path) else {
            throw CommandFailure("\(browser) could not take the screenshot: \(String(decoding: messages, as: UTF8.self).suffix(400))")
        }
    }
}
