import ArgumentParser
import Foundation
import IsletClient
import IsletCore

/// `islet history`: everything that happened to an activity.
struct History: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show an activity's history, with the reason for every ignored update."
    )

    @Argument(help: "The activity's id, or its first characters.")
    var id: String

    @OptionGroup var options: ClientOptions

    func run() async throws {
        let events = try await options.run { try await $0.history(id) }
        Output(json: options.json).events(events)
    }
}
