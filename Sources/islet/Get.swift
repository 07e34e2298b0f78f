import ArgumentParser
import Foundation
import IsletClient
import IsletCore

/// `islet get`: one activity.
struct Get: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show one activity.")

    @Argument(help: "The activity's id, or its first characters.")
    var id: String

    @OptionGroup var options: ClientOptions

    func run() async throws {
        let activity = try await options.run { try await $0.activity(id) }
        Output(json: options.json).activity(activity)
    }
}
