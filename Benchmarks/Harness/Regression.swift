import ArgumentParser
import Foundation

/// `islet-bench regression`: the server's CPU per acknowledged update on a small ingest of tiny
/// states, against the figure recorded in the repo for the same build (debug or release); fails
/// when it is more than twice that. CPU time, not wall time or a rate, so a busy machine does
/// not fail it; the median of three runs, so one disturbed run does not either. CI runs it.
struct Regression: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Fails when the server's CPU per update is more than twice the figure recorded in the repo."
    )

    @OptionGroup var systems: Systems

    @Option(help: "The recorded figures (JSON, one per build).")
    var recorded = "Benchmarks/cpu-per-update.json"

    @Option(help: "The build the islet binary is (default: this harness's own): debug or release.")
    var build = Self.ownBuild

    @Option(help: "Seconds measured per run.")
    var seconds = 3.0

    @Flag(help: "Record this measurement as the build's figure instead of checking against it.")
    var record = false

    static var ownBuild: String {
        #if DEBUG
        "debug"
        #else
        "release"
        #endif
    }

    /// One build's recorded figure, and how and where it was measured.
    struct Figure: Codable {
        var microseconds: Double
        var command: String
        var machine: String
        var measured: String
    }

    func run() async throws {
        guard ["debug", "release"].contains(build) else { throw ValidationError("--build is debug or release.") }
        var runs: [Double] = []
        for _ in 0..<3 {
            let target = try await SystemName.isletFull.start(systems, fleet: Fleet(activities: 1000, devices: 10))
            defer { target.stop() }
            let result = try await Ingest.closedLoop(target, size: .tiny, connections: 16, activities: 1000, seconds: seconds)
            guard result.failed == 0, result.rate > 0 else { throw HarnessError("\(result.failed) updates failed; nothing to measure") }
            runs.append(result.serverCPUPerUpdate * 1e6)
        }
        let median = runs.sorted()[1]
        let measured = "server CPU per update \(grouped(median)) µs (\(build) build; runs \(runs.map { grouped($0) }.joined(separator: ", ")) µs)"
        let url = URL(fileURLWithPath: recorded)
        var figures = (try? JSONDecoder().decode([String: Figure].self, from: Data(contentsOf: url))) ?? [:]
        if record {
            let date = ISO8601DateFormatter.string(from: Date(), timeZone: .current, formatOptions: [.withFullDate])
            figures[build] = Figure(
                microseconds: median.rounded(), command: "islet-bench regression --record (\(build) build)",
                machine: Machine.describe().split(separator: "\n").first.map { $0.replacingOccurrences(of: "machine: ", with: "") } ?? "",
                measured: date
            )
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try (encoder.encode(figures) + Data("\n".utf8)).write(to: url)
            print("regression: \(measured); recorded in \(recorded)")
            return
        }
        guard let figure = figures[build] else {
            throw HarnessError("\(recorded) has no \(build) figure; record one with --record")
        }
        let limit = 2 * figure.microseconds
        let verdict = median <= limit ? "ok" : "REGRESSION"
        print(
            "regression: \(measured); recorded \(grouped(figure.microseconds)) µs on \(figure.measured) (\(figure.machine)),"
                + " limit 2× = \(grouped(limit)) µs: \(verdict)"
        )
        guard median <= limit else { throw ExitCode(1) }
    }
}
