import Foundation

/// The CPU the server and the harness used over a measured window: on one machine the harness
/// competes with the server, so every result says what it took.
struct CPUMeter {
    private let serverParts: () -> [(part: String, seconds: Double)]
    private let atStart: (server: [(part: String, seconds: Double)], harness: Double)
    private let started = ContinuousClock.now

    /// Starts the window now.
    init(_ server: ServerUnderTest) {
        self.init { [("server", server.cpuSeconds)] }
    }

    /// Starts the window now, for every process of the system.
    init(_ target: any Target) {
        self.init { target.cpuParts }
    }

    private init(serverParts: @escaping () -> [(part: String, seconds: Double)]) {
        self.serverParts = serverParts
        atStart = (serverParts(), ProcessCPU.seconds(of: getpid()))
    }

    /// Ends the window now: each side's CPU as a share of one core over the time it lasted
    /// (longer than planned when a system falls behind an open-loop schedule).
    func use() -> CPUUse {
        let seconds = (ContinuousClock.now - started) / .seconds(1)
        let parts = zip(serverParts(), atStart.server).map { now, then in
            (part: now.part, share: (now.seconds - then.seconds) / seconds)
        }
        return CPUUse(
            server: parts.reduce(0) { $0 + $1.share },
            harness: (ProcessCPU.seconds(of: getpid()) - atStart.harness) / seconds,
            parts: parts
        )
    }
}

struct CPUUse {
    var server: Double
    var harness: Double
    /// The server's share by process group, where it has more than one.
    var parts: [(part: String, share: Double)] = []

    var text: String {
        let split = parts.count > 1 ? " (" + parts.map { "\($0.part) \(Int($0.share * 100))%" }.joined(separator: ", ") + ")" : ""
        return "server CPU \(Int(server * 100))%\(split), harness CPU \(Int(harness * 100))%"
    }
}

/// The value below which a share `p` of sorted nanosecond `values` lie, in milliseconds.
func percentile(_ p: Double, of values: [UInt64]) -> Double {
    guard !values.isEmpty else { return .nan }
    let index = min(values.count - 1, Int((Double(values.count) * p).rounded(.up)) - 1)
    return Double(values[max(0, index)]) / 1_000_000
}

/// "p50 1.20 ms, p99 10.94 ms" for the given shares of sorted nanosecond values.
func percentiles(_ shares: [Double], of values: [UInt64]) -> String {
    shares.map { String(format: "p%g %.2f ms", $0 * 100, percentile($0, of: values)) }
        .joined(separator: ", ")
}
