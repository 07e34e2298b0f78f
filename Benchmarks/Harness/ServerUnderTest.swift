import Foundation
import Synchronization

/// A server the harness starts, measures and stops: a child process on a free loopback port.
final class ServerUnderTest: @unchecked Sendable {
    let name: String
    let process = Process()
    private(set) var port = 0
    /// The APNs endpoint's port, when the server was started waiting for it.
    private(set) var apnsPort: Int?
    /// Seconds from starting the process to its serving.
    private(set) var startupSeconds = 0.0
    private let output = Pipe()
    private var seen = ""
    let directory: URL
    /// The admin key its environment gives (a node on a shared database is given one).
    private let givenAdminKey: String?

    /// Starts `executable arguments` and waits until it serves: with no `port`, until it prints
    /// "listening on http://host:port" (Islet, the ceiling) — and, with `waitForAPNs`, Islet's
    /// "APNs-compatible endpoint listening on https://host:port"; with one (a peer, told to
    /// listen there), until the port accepts connections.
    init(
        name: String, executable: String, arguments: [String], environment: [String: String] = [:], directory: URL,
        port: Int? = nil, waitForAPNs: Bool = false
    ) async throws {
        self.name = name
        self.directory = directory
        givenAdminKey = environment["ISLET_SERVER_ADMIN_KEY"]
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        process.standardOutput = output
        process.standardError = output
        process.currentDirectoryURL = directory
        _ = FileLimit.current  // raised before the child inherits it
        let clock = ContinuousClock()
        let started = clock.now
        try withSignalsUnblocked { try process.run() }
        if let port {
            try await awaitConnections(on: port)
        } else {
            try awaitListeningLines(waitForAPNs: waitForAPNs)
        }
        startupSeconds = (clock.now - started) / .seconds(1)
    }

    private func awaitListeningLines(waitForAPNs: Bool) throws {
        let handle = output.fileHandleForReading
        let deadline = Date().addingTimeInterval(120)
        while Date() < deadline {
            let data = handle.availableData
            if data.isEmpty { break }
            seen += String(decoding: data, as: UTF8.self)
            if port == 0, let match = seen.firstMatch(of: /listening on http:\/\/[^:\s]+:(\d+)/), let port = Int(match.1) {
                self.port = port
            }
            if waitForAPNs, apnsPort == nil, let match = seen.firstMatch(of: /endpoint listening on https:\/\/\S+:(\d+)/) {
                apnsPort = Int(match.1)
            }
            if port != 0, !waitForAPNs || apnsPort != nil {
                // Keep draining what it prints so it never blocks on a full pipe.
                handle.readabilityHandler = { handle in _ = handle.availableData }
                return
            }
        }
        process.terminate()
        throw HarnessError("\(name) did not start:\n\(seen)")
    }

    private func awaitConnections(on port: Int) async throws {
        let printed = Mutex("")
        output.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            printed.withLock { if $0.count < 10_000 { $0 += String(decoding: data, as: UTF8.self) } }
        }
        let deadline = Date().addingTimeInterval(30)
        while process.isRunning, Date() < deadline {
            if await Loopback.accepts(port: port) {
                self.port = port
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        process.terminate()
        throw HarnessError("\(name) did not start:\n\(printed.withLock { $0 })")
    }

    /// Runs `body` with this thread's signal mask cleared. A child inherits the mask of the thread
    /// that spawns it, and the concurrency pool's threads block most signals: a server spawned
    /// from one would never see the `SIGTERM` that stops it (Islet reads it with a signalfd and
    /// copes; Redis and Mosquitto would not).
    private func withSignalsUnblocked(_ body: () throws -> Void) rethrows {
        var none = sigset_t(), previous = sigset_t()
        sigemptyset(&none)
        pthread_sigmask(SIG_SETMASK, &none, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        try body()
    }

    var pid: Int32 { process.processIdentifier }

    /// Islet's admin key: the one its environment gave, else the one in its data directory.
    var adminKey: String {
        get throws {
            if let givenAdminKey { return givenAdminKey }
            return try String(contentsOf: directory.appendingPathComponent("data/admin.key"), encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }

    /// CPU seconds the server has used (user + system).
    var cpuSeconds: Double { ProcessCPU.seconds(of: pid) }

    /// Resident memory in kilobytes.
    var residentKilobytes: Int { ProcessCPU.residentKilobytes(of: pid) }

    /// Stops the server gracefully (SIGTERM), waits for it to exit and removes its scratch
    /// directory (unless a later run reuses it); returns how long stopping took.
    @discardableResult
    func stop(keepingDirectory: Bool = false) -> Double {
        let clock = ContinuousClock()
        let started = clock.now
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        if !keepingDirectory { try? FileManager.default.removeItem(at: directory) }
        return (clock.now - started) / .seconds(1)
    }
}

/// Readings from /proc.
enum ProcessCPU {
    static let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))

    static func seconds(of pid: Int32) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the command: state is field 3, utime 14, stime 15 (1-based in proc(5)).
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / ticks
    }

    static func residentKilobytes(of pid: Int32) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
        else { return 0 }
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }
}

struct HarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
