import ArgumentParser
import Foundation
import IsletClient
import IsletCore

/// `islet dismiss`: remove an activity as a person would from the Lock Screen.
struct Dismiss: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Dismiss an activity as a person would, or every shown one with --all (admin key).",
        discussion: "islet dismiss --all clears the Lock Screen: active, stale and ended activities (of --app, --device or --type). Scheduled ones are not shown yet: end them."
    )

    @Argument(help: "The activity's id, or its first characters.")
    var id: String?

    @OptionGroup var every: EveryActivityOptions

    @Flag(name: .shortAndLong, help: "Print nothing on success.")
    var quiet = false

    @OptionGroup var options: ClientOptions

    func validate() throws {
        try every.validate(id: id)
    }

    func run() async throws {
        let output = Output(json: options.json)
        guard let id else {
            let count = try await options.run { client in
                try await every.forEach(in: [.active, .stale, .ended], client: client, output: output) { _ = try await client.dismiss($0) }
            }
            if !quiet { output.count(count, "dismissed") }
            return
        }
        let activity = try await options.run { try await $0.dismiss(id) }
        if !quiet { output.activity(activity) }
    }
}
