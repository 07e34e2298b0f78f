import ArgumentParser
import Foundation

/// `islet-bench ingest`: the highest rate of acknowledged updates, each connection with one
/// update in flight (what a producer's backend does).
struct Ingest: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Acknowledged updates per second, one in flight per connection.")

    @OptionGroup var systems: Systems

    @Option(help: "Systems (comma-separated): \(SystemName.allCases.map(\.rawValue).joined(separator: ", ")).")
    var system = SystemName.standard

    @Option(help: "Connections, one update in flight each.")
    var connections = 64

    @Option(help: "Activities updated round-robin.")
    var activities = 1000

    @Option(help: "Devices the activities are spread over (default: one per 100 activities, as many phones would hold them).")
    var devices: Int?

    @Option(help: "Seconds measured (after a warm-up of a fifth of it).")
    var seconds = 10.0

    @Option(help: "Content states (comma-separated): tiny, 2KB.")
    var size = PayloadSize.allCases.map(\.rawValue).joined(separator: ",")

    func run() async throws {
        let sizes = try size.split(separator: ",").map { name in
            guard let size = PayloadSize(rawValue: String(name)) else { throw ValidationError("Unknown size \(name); tiny or 2KB.") }
            return size
        }
        for name in try SystemName.list(system) {
            for size in sizes {
                let target = try await name.start(systems, fleet: Fleet(activities: activities, devices: devices ?? max(1, activities / 100)))
                defer { target.stop() }
                print(try await measure(target, size: size))
            }
        }
    }

    /// Runs the closed loop and returns the result line.
    func measure(_ target: any Target, size: PayloadSize) async throws -> String {
        let result = try await Self.closedLoop(target, size: size, connections: connections, activities: activities, seconds: seconds)
        let (rate, cpu, failed) = (result.rate, result.cpu, result.failed)
        let runAgain = result.runAgain.map { ", changes run again \($0) (\(String(format: "%.2f", Double($0) / max(1, rate * seconds) * 100))%)" } ?? ""
        return "ingest \(target.label) \(size.rawValue), \(grouped(Double(activities))) activities: \(grouped(rate)) updates/s"
            + " (\(cpu.text); server CPU per update \(grouped(result.serverCPUPerUpdate * 1e6)) µs\(runAgain)\(failed > 0 ? ", \(failed) failed" : ""))"
    }

    /// What a closed loop measured.
    struct Result {
        /// Acknowledged updates per second.
        var rate: Double
        var cpu: CPUUse
        var failed: Int
        /// Changes the store ran again during the measured seconds (`Target.changesRunAgain`).
        var runAgain: Int?
        /// Updates acknowledged in all, the warm-up's too.
        var acknowledgedWithWarmUp = 0
        /// The server's CPU seconds per acknowledged update.
        var serverCPUPerUpdate: Double { cpu.server / rate }
    }

    /// Each connection sends an update, waits for its answer, sends the next, for `seconds`
    /// after a warm-up of a fifth of it.
    static func closedLoop(
        _ target: any Target, size: PayloadSize, connections: Int, activities: Int, seconds: Double
    ) async throws -> Result {
        let pool = try await target.publishers(connections)
        let warmUp = seconds / 5
        let clock = ContinuousClock()
        let start = clock.now.advanced(by: .seconds(warmUp))
        let end = start.advanced(by: .seconds(seconds))
        let count = activities
        var meter: CPUMeter?
        var runAgainBefore: Int?
        let (done, failed, all) = try await withThrowingTaskGroup(of: (Int, Int, Int).self) { group in
            for (index, publisher) in pool.enumerated() {
                group.addTask {
                    var done = 0, failed = 0, all = 0, sequence = index
                    while clock.now < end {
                        sequence += pool.count
                        let accepted = try await publisher.update(sequence % count, state: size.state(sequence: sequence))
                        if accepted { all += 1 }
                        let finished = clock.now
                        guard finished >= start, finished < end else { continue }
                        if accepted { done += 1 } else { failed += 1 }
                    }
                    return (done, failed, all)
                }
            }
            try await Task.sleep(until: start, clock: clock)
            meter = CPUMeter(target)
            runAgainBefore = try await target.changesRunAgain()
            return try await group.reduce(into: (0, 0, 0)) { $0.0 += $1.0; $0.1 += $1.1; $0.2 += $1.2 }
        }
        let cpu = meter!.use()
        let runAgain = try await target.changesRunAgain().map { $0 - (runAgainBefore ?? 0) }
        for publisher in pool { await publisher.close() }
        return Result(rate: Double(done) / seconds, cpu: cpu, failed: failed, runAgain: runAgain, acknowledgedWithWarmUp: all)
    }
}

/// The two content states of the issue: tiny, and 2 KB. Every system gets exactly these bytes:
/// Islet inside its update body, the peers as the value or message.
enum PayloadSize: String, CaseIterable, Sendable {
    case tiny, twoKB = "2KB"

    private static let padding = String(repeating: "x", count: 2000)

    /// - Parameter sent: The update's scheduled send time (uptime nanoseconds), for latency.
    func state(sequence: Int, sent: UInt64? = nil) -> String {
        let stamp = sent.map { #","sent":\#($0)"# } ?? ""
        switch self {
        case .tiny: return #"{"speed":27.4,"seq":\#(sequence)\#(stamp)}"#
        case .twoKB: return #"{"speed":27.4,"seq":\#(sequence)\#(stamp),"note":"\#(Self.padding)"}"#
        }
    }
}
