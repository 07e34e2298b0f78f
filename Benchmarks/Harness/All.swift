import ArgumentParser
import Foundation
import IsletTestSupport

/// `islet-bench all`: every figure of BENCHMARKS.md in one run — the machine first, then each
/// workload against every system, each step printed as the command that repeats it alone.
struct All: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Every figure of BENCHMARKS.md: the machine, then each workload against every system."
    )

    @OptionGroup var systems: Systems

    @Flag(help: "A few seconds per step at a tiny load (what CI runs: the harness works; no figure means anything).")
    var tiny = false

    @Flag(help: "Islet only (its two durabilities; no ceiling, no peers): for measuring another Islet build.")
    var isletOnly = false

    @Option(help: "The most activities any step stores (ingest's scaling, memory, start-up).")
    var largest = 100_000

    func run() async throws {
        say(Machine.describe())
        for step in steps {
            let arguments = step + passedOn
            say("\n$ islet-bench \(arguments.joined(separator: " "))")
            // Each step in a process of its own: nothing of one (threads, sockets, memory) is
            // left to weigh on the next, and its lines appear as it finishes.
            let process = Process()
            process.executableURL = URL(fileURLWithPath: systems.harnessPath)
            process.arguments = arguments
            try process.run()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else {
                throw HarnessError("islet-bench \(step[0]) failed (exit \(process.terminationStatus))")
            }
        }
    }

    /// Writes a line at once (not through `print`'s buffer), so it stays in order with the steps'.
    private func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    /// The systems' binaries, handed to every step where they are not the defaults.
    private var passedOn: [String] {
        let defaults = try? Systems.parse([])
        var arguments: [String] = []
        if let islet = systems.islet { arguments += ["--islet", islet] }
        if systems.natsServer != defaults?.natsServer { arguments += ["--nats-server", systems.natsServer] }
        if systems.mosquitto != defaults?.mosquitto { arguments += ["--mosquitto", systems.mosquitto] }
        if systems.redisServer != defaults?.redisServer { arguments += ["--redis-server", systems.redisServer] }
        return arguments
    }

    private var steps: [[String]] {
        let islet = "islet-full,islet-normal"
        let all = isletOnly ? islet : SystemName.standard
        // Islet on PostgreSQL, one node and two, beside SQLite (docs/cluster.md), where it is installed.
        let shared = PostgresServer.available ? "islet-full,islet-postgres,islet-postgres-2" : nil
        let subscribable = isletOnly ? islet : SystemName.subscribable
        if tiny {
            return [
                ["ingest", "--system", all, "--seconds", "0.5", "--activities", "10", "--connections", "2"],
                ["ingest", "--system", "islet-full", "--size", "tiny", "--seconds", "0.5", "--activities", "100", "--connections", "2"],
                ["latency", "--system", subscribable, "--seconds", "0.5", "--warm-up", "0.5", "--activities", "20", "--devices", "5", "--connections", "2"],
                ["latency", "--system", islet, "--transport", "ws", "--seconds", "0.5", "--warm-up", "0.5", "--activities", "20", "--devices", "5", "--connections", "2"],
                ["fanout", "--system", subscribable, "--seconds", "1", "--warm-up", "0.5", "--subscribers", "50"],
                ["fanout", "--system", islet, "--transport", "ws", "--seconds", "1", "--warm-up", "0.5", "--subscribers", "50"],
                ["memory", "--activities", "20,50", "--devices", "5", "--subscribers", "10", "--settle", "2"],
                ["startup", "--activities", "50", "--devices", "5", "--runs", "1"],
                ["apns", "--activities", "20", "--connections", "1,2", "--streams", "10", "--seconds", "0.5"],
                ["delivery", "--sink", "--phones", "20", "--rate", "40", "--seconds", "1", "--warm-up", "0.5", "--connections", "2"],
            ] + (shared.map { shared in [
                ["ingest", "--system", shared, "--size", "tiny", "--seconds", "0.5", "--activities", "10", "--connections", "2"],
                ["latency", "--system", shared, "--seconds", "0.5", "--warm-up", "0.5", "--activities", "20", "--devices", "5", "--connections", "2"],
            ] } ?? [])
        }
        return [
            // Ingest: every system, both content states; then Islet's cost per update as activities grow.
            ["ingest", "--system", all, "--seconds", "10"],
            ["ingest", "--system", "islet-full", "--size", "tiny", "--seconds", "10", "--activities", "10000"],
            ["ingest", "--system", "islet-full", "--size", "tiny", "--seconds", "10", "--activities", "\(largest)"],
            // Update → subscriber: 1,000 and 10,000 activities at 1 Hz, one subscriber per device.
            ["latency", "--system", subscribable, "--seconds", "10"],
            ["latency", "--system", islet, "--transport", "ws", "--seconds", "10"],
            ["latency", "--system", subscribable, "--seconds", "10", "--activities", "10000", "--devices", "1000", "--connections", "128"],
            ["latency", "--system", islet, "--transport", "ws", "--seconds", "10", "--activities", "10000", "--devices", "1000", "--connections", "128"],
            // One activity, 10,000 subscribers.
            ["fanout", "--system", subscribable, "--seconds", "10", "--subscribers", "10000"],
            ["fanout", "--system", islet, "--transport", "ws", "--seconds", "10", "--subscribers", "10000"],
            ["memory", "--activities", "10000,\(largest)"],
            ["startup", "--activities", "\(largest)"],
            // The APNs endpoint beside a sink that answers 200 at once (the HTTP/2 ceiling); then
            // Islet sending to that sink, offered more than half the ceiling.
            ["apns", "--seconds", "10"],
            ["delivery", "--sink", "--phones", "1000", "--rate", "2500", "--seconds", "10", "--warm-up", "3", "--connections", "64"],
        ] + (shared.map { shared in [
            // On PostgreSQL: ingest, and update → subscriber with publishers on every node and
            // subscribers on the last (with two nodes, half the updates cross nodes).
            ["ingest", "--system", shared, "--size", "tiny", "--seconds", "10"],
            ["latency", "--system", shared, "--seconds", "10", "--activities", "200", "--devices", "100"],
        ] } ?? [])
    }
}

/// What the figures were measured on.
enum Machine {
    static func describe() -> String {
        let cpu = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
            .split(separator: "\n").first { $0.hasPrefix("model name") }?
            .split(separator: ":", maxSplits: 1).last?.trimmingCharacters(in: .whitespaces) ?? "unknown CPU"
        let memory = ProcessInfo.processInfo.physicalMemory / (1 << 30)
        return """
            machine: \(ProcessInfo.processInfo.activeProcessorCount) cores (\(cpu)), \(memory) GiB, Linux \(output("uname", "-r"))
            disk under \(NSTemporaryDirectory()): \(output("sh", "-c", "df -T \(NSTemporaryDirectory()) | tail -1 | awk '{print $1\" \"$2}'"))
            swift: \(output("swift", "--version").split(separator: "\n").first ?? "unknown")
            peers: \(output("/usr/sbin/nats-server", "--version")); mosquitto \(output("sh", "-c", "dpkg-query -W -f='${Version}' mosquitto")); \(output("/usr/bin/redis-server", "--version").split(separator: " ").prefix(3).joined(separator: " "))
            """
    }

    /// What a command prints, trimmed; "unknown" when it cannot run.
    private static func output(_ command: String, _ arguments: String...) -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [command] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return "unknown" }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? "unknown" : text
    }
}
