import AsyncHTTPClient
import Foundation
import IsletClient
import IsletCore
import IsletTestSupport
import Synchronization
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
    let process: Process
    let port: Int
    /// The APNs-compatible endpoint's port.
    let apnsPort: Int?
    /// Everything the server printed.
    let log: OutputBox

    /// Starts `islet serve --port <port> --data <directory>` (a free port unless told) and waits
    /// until it says where it listens.
    init(data: DataDirectory, port: Int = 0, environment: [String: String] = [:]) async throws {
        #expect(FileManager.default.isExecutableFile(atPath: isletBinary.path), "build the islet binary first: swift build")
        let process = Process()
        process.executableURL = isletBinary
        process.arguments = ["serve", "--port", "\(port)", "--data", data.path]
        process.environment = ProcessInfo.processInfo.environment
            .merging(["ISLET_APNS_PORT": "0"]) { _, new in new }
            .merging(environment) { _, new in new }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        let (lines, continuation) = AsyncStream<String>.makeStream()
        let box = OutputBox()
        pipe.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            if data.isEmpty {
                handle.readabilityHandler = nil
                continuation.finish()
                return
            }
            let text = String(decoding: data, as: UTF8.self)
            box.output.withLock { $0 += text }
            continuation.yield(text)
        }
        try process.run()
        let expectsAPNs = environment["ISLET_APNS_ENABLED"] != "false"
        var seen = ""
        var port: Int?
        var apnsPort: Int?
        func bound(after marker: String) -> Int? {
            guard let range = seen.range(of: marker + #"[^\s/]+:(\d+)"#, options: .regularExpression) else { return nil }
            return Int(seen[range].split(separator: ":").last!)
        }
        // A server that never says where it listens is stopped, so the test fails instead of hanging.
        let pid = process.processIdentifier
        let watchdog = Task.detached {
            try await Task.sleep(for: .seconds(30))
            kill(pid, SIGKILL)
        }
        defer { watchdog.cancel() }
        for await chunk in lines {
            seen += chunk
            port = bound(after: "listening on http://")
            apnsPort = bound(after: "endpoint listening on https://")
            if port != nil, apnsPort != nil || !expectsAPNs { break }
        }
        guard let port else {
            throw ServerFailed(output: seen)
        }
        self.process = process
        self.port = port
        self.apnsPort = apnsPort
        self.log = box
    }

    var url: String { "http://127.0.0.1:\(port)" }
    var pid: Int32 { process.processIdentifier }

    /// Sends a signal and waits for the process to exit; returns its exit status. A server
    /// still running 30 s later is killed, so a shutdown that hangs fails the test (status 9).
    @discardableResult
    func stop(signal: Int32) async -> Int32 {
        kill(pid, signal)
        let pid = self.pid
        let watchdog = Task.detached {
            try await Task.sleep(for: .seconds(30))
            kill(pid, SIGKILL)
        }
        await offThePool { [process] in process.waitUntilExit() }
        watchdog.cancel()
        return process.terminationStatus
    }

    /// The process's resident memory, in kilobytes.
    func residentKilobytes() -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(whereSeparator: \.isWhitespace).dropFirst().first ?? "") ?? 0
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}

final class OutputBox: Sendable {
    let output = Mutex("")
}

struct ServerFailed: Error, CustomStringConvertible {
    var output: String
    var description: String { "islet serve did not start:\n\(output)" }
}

/// Runs the `islet` CLI and returns its exit status and output; a run that takes longer than
/// `timeout` seconds is killed (status 9), so a broken command fails the test instead of hanging it.
func runCLI(
    _ arguments: [String], environment: [String: String] = [:], timeout: Double = 30
) async throws -> (status: Int32, stdout: String, stderr: String) {
    try await runProgram(isletBinary, arguments, environment: environment, timeout: timeout)
}

/// Runs a program with `input` on its standard input, and returns its exit status and output;
/// one that takes longer than `timeout` seconds is killed (status 9).
func runProgram(
    _ executable: URL, _ arguments: [String], environment: [String: String] = [:], input: Data? = nil, timeout: Double
) async throws -> (status: Int32, stdout: String, stderr: String) {
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
    let out = Pipe()
    let err = Pipe()
    let inputPipe = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = input == nil ? FileHandle.nullDevice : inputPipe
    try process.run()
    if let input {
        inputPipe.fileHandleForWriting.write(input)
        try inputPipe.fileHandleForWriting.close()
    }
    let pid = process.processIdentifier
    let watchdog = Task.detached {
        try await Task.sleep(for: .seconds(timeout))
        kill(pid, SIGKILL)
    }
    defer { watchdog.cancel() }
    let (stdout, stderr) = await offThePool {
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self))
    }
    return (process.terminationStatus, stdout, stderr)
}

/// Runs a Python script with the system's `python3`.
func runPython(
    _ script: URL, arguments: [String] = [], environment: [String: String] = [:], input: Data? = nil, timeout: Double
) async throws -> (status: Int32, stdout: String, stderr: String) {
    try await runProgram(
        URL(fileURLWithPath: "/usr/bin/env"), ["python3", script.path] + arguments, environment: environment, input: input,
        timeout: timeout
    )
}

/// Whether the system's Python can import `module`; always true when `requiredBy` (an
/// environment variable `.ci/run` sets) is set, so that there a missing module fails the test
/// rather than skipping it.
func pythonHas(_ module: String, requiredBy variable: String) -> Bool {
    if ProcessInfo.processInfo.environment[variable] != nil { return true }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", "-c", "import \(module)"]
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    guard (try? process.run()) != nil else { return false }
    process.waitUntilExit()
    return process.terminationStatus == 0
}
