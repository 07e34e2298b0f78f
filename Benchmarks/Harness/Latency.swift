import ArgumentParser
import Foundation

/// `islet-bench latency`: from sending an update to a subscriber receiving it, at a fixed
/// offered load, one subscriber per device.
struct Latency: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Update → subscriber latency at a fixed load, one subscriber per device.")

    @OptionGroup var systems: Systems
    @OptionGroup var options: DeliveryOptions

    @Option(help: "Activities, each updated `rate` times a second.")
    var activities = 1000

    @Option(help: "Devices, one subscriber each; activities are spread over them.")
    var devices = 1000

    @Option(help: "Connections that send the updates.")
    var connections = 64

    func run() async throws {
        let fleet = Fleet(activities: activities, devices: devices)
        let deliveries = options.deliveries(fleet: fleet, connections: connections)
        try await options.forEachSystem(systems, fleet: fleet) { target in
            let subscribers = try await target.subscribers(devices) { $0 }
            let result = try await deliveries.run(target, subscribers: subscribers)
            let latencies = result.arrivals.map(\.latency).sorted()
            return String(
                format: "latency %@ over %@, %d activities × %g Hz, %d subscribers: %@ (%d of %d events; %@)",
                target.label, target.subscription, activities, options.rate, devices, percentiles([0.5, 0.99, 0.999], of: latencies),
                latencies.count, result.sent, result.cpu.text
            )
        }
    }
}
