import ArgumentParser
import Foundation
import IsletClient
import IsletCore

/// `islet dismiss`: remove an activity as a person would from the Lock Screen.
struct Dismiss: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Dismiss an activity, as a person would (admin key).")

    @Argument(help: "The activity's id.")
    var id: String

    @OptionGroup var options: ClientOptions

    func run() async throws {
        let activity = try await options.run { try await $0.dismiss(id) }
        Output(json: options.json).activity(activity)
    }
}
