import ArgumentParser
import Foundation

/// `islet-bench fanout`: one activity, many subscribers on its device, one update a second —
/// how long until the last subscriber has it, and how deliveries spread.
struct Fanout: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "One activity, many subscribers on its device: latency to the last and to all.")

    @OptionGroup var systems: Systems
    @OptionGroup var options: DeliveryOptions

    @Option(help: "Subscribers, all on the activity's device.")
    var subscribers = 10_000

    func run() async throws {
        let fleet = Fleet(activities: 1, devices: 1)
        let deliveries = options.deliveries(fleet: fleet, connections: 1)
        try await options.forEachSystem(systems, fleet: fleet) { target in
            let connected = try await target.subscribers(subscribers) { _ in 0 }
            let result = try await deliveries.run(target, subscribers: connected)
            let all = result.arrivals.map(\.latency).sorted()
            // Per update, the slowest of its deliveries: the last subscriber to have it.
            let last = Dictionary(grouping: result.arrivals, by: \.sent).values.map { $0.map(\.latency).max()! }.sorted()
            return String(
                format: "fanout %@ over %@, %d subscribers, %d updates: last subscriber %@; all deliveries %@ (%d of %d deliveries; %@)",
                target.label, target.subscription, subscribers, result.sent, percentiles([0.5, 0.99], of: last),
                percentiles([0.5, 0.99, 0.999], of: all), all.count, result.sent * subscribers, result.cpu.text
            )
        }
    }
}
