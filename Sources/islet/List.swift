import ArgumentParser
import Foundation
import IsletClient
import IsletCore

/// `islet list`: activities in the order a device shows them.
struct List: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List activities, most relevant first.")

    @Option(help: "Only this app's.")
    var app: String?

    @Option(help: "Only this device's.")
    var device: String?

    @Option(help: "Only these states, comma-separated (pending,active,stale,ended,dismissed).")
    var state: String?

    @Option(help: "Only this attributes type.")
    var type: String?

    @Option(help: "At most this many (1–1000).")
    var limit = 100

    @OptionGroup var options: ClientOptions

    func run() async throws {
        var filter = ActivityFilter(bundleId: app, deviceId: device, attributesType: type, limit: limit)
        if let state {
            filter.states = Set(try state.split(separator: ",").map { name in
                guard let value = ActivityState(rawValue: String(name)) else {
                    throw ValidationError("Unknown state \(name): use pending, active, stale, ended or dismissed.")
                }
                return value
            })
        }
        let activities = try await options.run { try await $0.activities(filter) }
        Output(json: options.json).activities(activities)
    }
}
