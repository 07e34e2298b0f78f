import ArgumentParser
import Foundation
import IsletClient
import IsletCore

/// `islet end`: end an activity.
struct End: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "End an activity, or every live one with --all.",
        discussion: "islet end --all --dismiss immediate clears every live activity (of --app, --device or --type) off the Lock Screen."
    )

    @Argument(help: "The activity's id, or its first characters.")
    var id: String?

    @OptionGroup var every: EveryActivityOptions

    @OptionGroup var content: ContentOptions

    @Option(help: "When it leaves the Lock Screen: default (up to 4h), immediate, a duration (30m) or at:<Unix time>.")
    var dismiss = "default"

    @Option(help: "The end's Unix timestamp.")
    var timestamp: Double?

    @Flag(name: .shortAndLong, help: "Print nothing on success.")
    var quiet = false

    @OptionGroup var options: ClientOptions

    func validate() throws {
        try every.validate(id: id)
    }

    func run() async throws {
        let end = EndRequest(
            content: try content.content(), dismissalPolicy: try parseDismissal(dismiss),
            timestamp: timestamp.map(Date.init(timeIntervalSince1970:))
        )
        let output = Output(json: options.json)
        guard let id else {
            let count = try await options.run { client in
                try await every.forEach(in: [.pending, .active, .stale], client: client, output: output) { _ = try await client.end($0, end) }
            }
            if !quiet { output.count(count, "ended") }
            return
        }
        let activity = try await options.run { try await $0.end(id, end) }
        if !quiet { output.activity(activity) }
    }
}
