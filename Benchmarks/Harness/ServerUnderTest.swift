import Foundation

/// A server the harness starts, measures and stops: a child process on a free loopback port.
final class ServerUnderTest: @unchecked Sendable {
    let name: String
    let process = Process()
    private(set) var port = 0
    /// The APNs endpoint's port, when the server was started waiting for it.
    private(set) var apnsPort: Int?
    /// Seconds from starting the process to its "listening on http://…" line.
    private(set) var startupSeconds = 0.0
    private let output = Pipe()
    private var seen = ""
    let directory: URL

    /// Starts `executable arguments` and waits for its "listening on http://host:port" line (and,
    /// with `waitForAPNs`, for Islet's "APNs-compatible endpoint listening on https://host:port").
    init(
        name: String, executable: String, arguments: [String], environment: [String: String] = [:], directory: URL,
        waitForAPNs: Bool = false
    ) async throws {
        self.name = name
        self.directory = directory
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        process.standardOutput = output
        process.standardError = output
        process.currentDirectoryURL = directory
        let clock = ContinuousClock()
        let started = clock.now
        try process.run()
        let handle = output.fileHandleForReading
        let deadline = Date().addingTimeInterval(120)
        while Date() < deadline {
            let data = handle.availableData
            if data.isEmpty { break }
            seen += String(decoding: data, as: UTF8.self)
            if port == 0, let match = seen.firstMatch(of: /listening on http:\/\/[^:\s]+:(\d+)/), let port = Int(match.1) {
                startupSeconds = (clock.now - started) / .seconds(1)
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

    var pid: Int32 { process.processIdentifier }

    /// Islet's admin key, from its data directory.
    var adminKey: String {
        get throws {
            try String(contentsOf: directory.appendingPathComponent("data/admin.key"), encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }

    /// CPU seconds the server has used (user + system).
    var cpuSeconds: Double { ProcessCPU.seconds(of: pid) }

    /// Resident memory in kilobytes.
    var residentKilobytes: Int { ProcessCPU.residentKilobytes(of: pid) }

    /// Stops the server gracefully (SIGTERM) and waits for it to exit; returns how long that took.
    @discardableResult
    func stop() -> Double {
        guard process.isRunning else { return 0 }
        let clock = ContinuousClock()
        let started = clock.now
        process.terminate()
        process.waitUntilExit()
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
