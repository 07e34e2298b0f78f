import Foundation

/// A Prometheus of a test's own: Debian's `prometheus` package (`.ci/run` installs it), on a free
/// loopback port, its configuration and database in a temporary directory; `stop()` ends it and
/// deletes them.
public final class PrometheusServer: Sendable {
    /// Its HTTP API: `http://127.0.0.1:<port>`.
    public let url: String
    /// Its directory: the configuration goes there, and files it names (rules) may be put beside it.
    public let directory: URL
    private let process: ChildProcess

    /// Where Debian puts Prometheus.
    static let program = "/usr/bin/prometheus"
    /// Prometheus's own tool (`promtool check metrics` lints an exposition), from the same package.
    public static let promtool = "/usr/bin/promtool"

    /// Whether tests that need Prometheus run: when it is installed, or when
    /// `ISLET_REQUIRE_PROMETHEUS` is set (`.ci/run` sets it), which makes its absence a failure
    /// rather than a skip.
    public static var available: Bool {
        FileManager.default.isExecutableFile(atPath: program) || ProcessInfo.processInfo.environment["ISLET_REQUIRE_PROMETHEUS"] != nil
    }

    /// Starts Prometheus with `configuration` (prometheus.yml's text) and `files` (name → text,
    /// written beside it first: rule files). Its API answers soon after; a test polls it.
    public init(configuration: String, files: [String: String] = [:]) async throws {
        guard FileManager.default.isExecutableFile(atPath: Self.program) else {
            throw PrometheusServerError("Prometheus is not installed: apt-get install prometheus (.ci/run does)")
        }
        directory = URL(fileURLWithPath: "/tmp/islet-prometheus-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for (name, text) in files {
            try text.write(to: directory.appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
        let file = directory.appendingPathComponent("prometheus.yml")
        try configuration.write(to: file, atomically: true, encoding: .utf8)
        let port = try freeLoopbackPort()
        url = "http://127.0.0.1:\(port)"
        process = try await ChildProcess(URL(fileURLWithPath: Self.program), [
            "--config.file=\(file.path)", "--storage.tsdb.path=\(directory.appendingPathComponent("data").path)",
            "--web.listen-address=127.0.0.1:\(port)", "--log.level=warn",
        ])
    }

    deinit {
        stop()
    }

    /// What Prometheus said: its warnings and errors.
    public var output: String { process.output }

    /// Stops Prometheus and deletes its directory.
    public func stop() {
        process.kill()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// Why a test's Prometheus could not be started.
public struct PrometheusServerError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
