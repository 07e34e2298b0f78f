import AsyncHTTPClient
import Foundation
import IsletClient
import IsletCore
import IsletTestSupport
import Testing

/// The real `islet` binary, built next to the test bundle (or named by ISLET_BINARY).
let isletBinary: URL = {
    if let path = ProcessInfo.processInfo.environment["ISLET_BINARY"] {
        return URL(fileURLWithPath: path)
    }
    return URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("islet")
}()

/// A temporary data directory, deleted when the value goes away.
final class DataDirectory: Sendable {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("islet-it-\(UUID().uuidString)")
    var path: String { url.path }
    var adminKey: String {
        (try? String(contentsOf: url.appendingPathComponent("admin.key"), encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }
}

/// A fresh `islet serve` on a data directory of its own, with one app created and a client
/// that holds the app's key.
struct ServedApp {
    let data: DataDirectory
    let server: ServerProcess
    let app: CreatedApp
    let client: IsletClient

    init(_ bundleId: BundleID, http: HTTPClient) async throws {
        data = DataDirectory()
        server = try await ServerProcess(data: data)
        app = try await IsletClient(server: server.url, key: data.adminKey, http: http).createApp(bundleId: bundleId)
        client = IsletClient(server: server.url, key: app.apiKey, http: http)
    }
}

/// One `islet serve` process on a free port.
final class ServerProcess: Sendable {
    let child: ChildProcess
    let port: Int
    /// The APNs-compatible endpoint's port.
    let apnsPort: Int?

    /// Starts `islet serve --port <port> --data <directory>` (a free port unless told) and waits
    /// until it says where it listens. One that ends first, or says nothing of it within 30 s,
    /// fails the test with how it ended and what it printed (and one still running is killed).
    init(data: DataDirectory, port: Int = 0, environment: [String: String] = [:]) async throws {
        #expect(FileManager.default.isExecutableFile(atPath: isletBinary.path), "build the islet binary first: swift build")
        let child = try await ChildProcess(
            isletBinary, ["serve", "--port", "\(port)", "--data", data.path],
            // A commit PostgreSQL holds is a hang in a test not about that bound (`Duration.testCommits`).
            environment: ["ISLET_APNS_PORT": "0", "ISLET_STORE_COMMIT_TIMEOUT": "\(Int(hangFloor))s"].merging(environment) { _, new in new }
        )
        let expectsAPNs = environment["ISLET_APNS_ENABLED"] != "false"
        (self.port, self.apnsPort) = try await child.waitFor("where it listens") { output in
            guard let port = boundPort(in: output, after: "listening on http://") else { return nil }
            let apnsPort = boundPort(in: output, after: "endpoint listening on https://")
            return apnsPort != nil || !expectsAPNs ? (port, apnsPort) : nil
        }
        self.child = child
    }

    var url: String { "http://127.0.0.1:\(port)" }
    var pid: Int32 { child.pid }
    /// Everything the server printed so far.
    var output: String { child.output }
    var isRunning: Bool { child.termination == nil }

    /// Sends a signal and waits for the process to exit; returns its exit status. A server
    /// still running 30 s later is killed, so a shutdown that hangs fails the test (status 9).
    @discardableResult
    func stop(signal: Int32) async -> Int32 {
        await child.stop(signal).status
    }

    /// The process's resident memory, in kilobytes.
    func residentKilobytes() -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(whereSeparator: \.isWhitespace).dropFirst().first ?? "") ?? 0
    }
}

/// The port in the first address after `marker` in a server's output (`… listening on
/// http://127.0.0.1:8080`).
private func boundPort(in output: String, after marker: String) -> Int? {
    guard let range = output.range(of: marker + #"[^\s/]+:(\d+)"#, options: .regularExpression) else { return nil }
    return Int(output[range].split(separator: ":").last!)
}

/// Runs the `islet` CLI and returns its exit status and output; a run that takes longer than
/// `timeout` seconds is killed (status 9), so a broken command fails the test instead of hanging it.
func runCLI(
    _ arguments: [String], environment: [String: String] = [:], timeout: Double = 30
) async throws -> (status: Int32, stdout: String, stderr: String) {
    try await runProgram(isletBinary, arguments, environment: environment, timeout: timeout)
}


