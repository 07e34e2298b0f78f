import ArgumentParser
import Foundation

/// `islet-bench startup`: how long `islet serve` takes from exec to its "listening on" line, on
/// an empty data directory and on one holding many stored activities.
struct Startup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Start-up time of islet serve (exec → listening line): empty data directory, and one holding N activities."
    )

    @OptionGroup var systems: Systems

    @Option(help: "Activities stored in the data directory before it is restarted.")
    var activities = 100_000

    @Option(help: "Devices the activities are spread over, round-robin.")
    var devices = 1000

    @Option(help: "Starts timed for each data directory.")
    var runs = 3

    @OptionGroup var store: StoreChoice

    @Flag(help: "Run the APNs endpoint too (islet serve's default; its first start makes a TLS certificate).")
    var apns = false

    func validate() throws {
        guard activities > 0, devices > 0, runs > 0 else { throw ValidationError("--activities, --devices and --runs must be positive.") }
    }

    func run() async throws {
        print("startup \(apns ? "with" : "without") the APNs endpoint: from exec of islet serve to its \"listening on http://\" line; each stop is SIGTERM, then waiting for the exit")
        var empty: [Double] = []
        var name = ""
        for _ in 0..<runs {
            let server = try await systems.startIslet(durability: store.durability, apns: apns)
            empty.append(server.startupSeconds)
            name = server.name
            server.stop()
        }
        print("startup \(name), empty data directory (each a first start): \(Self.summary(empty))")

        let filled = try await systems.startIslet(durability: store.durability, apns: apns)
        let directory = filled.directory
        let admin = try filled.adminKey
        let setup = try await HTTPConnection.connect(port: filled.port)
        let key = try await IsletSetup.app(on: setup, admin: admin, bundleId: "com.bench.startup")
        await setup.close()
        let deviceCount = devices
        try await IsletSetup.devices(deviceCount, port: filled.port, admin: admin)
        _ = try await IsletSetup.activities(activities, port: filled.port, key: key) { "d\($0 % deviceCount)" }
        let firstStop = filled.stop(keepingDirectory: true)
        print(String(format: "startup: %@ activities over %@ devices stored, then stopped in %.2f s; data directory %@", grouped(Double(activities)),
                     grouped(Double(deviceCount)), firstStop, DiskUsage(of: directory.appendingPathComponent("data")).text(per: activities, "activity")))

        var stored: [Double] = []
        var stops: [Double] = []
        for _ in 0..<runs {
            let server = try await systems.startIslet(durability: store.durability, directory: directory, apns: apns)
            stored.append(server.startupSeconds)
            stops.append(server.stop(keepingDirectory: true))
        }
        print("startup \(name), \(grouped(Double(activities))) stored activities: \(Self.summary(stored)); stops \(Self.summary(stops))")
        try? FileManager.default.removeItem(at: directory)
    }

    /// Each time and the median, in milliseconds.
    static func summary(_ seconds: [Double]) -> String {
        let sorted = seconds.sorted()
        let median = sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
        return seconds.map { String(format: "%.0f", $0 * 1000) }.joined(separator: ", ") + String(format: " ms (median %.0f ms)", median * 1000)
    }
}
