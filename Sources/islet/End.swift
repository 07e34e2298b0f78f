import ArgumentParser
import Foundation
import IsletClient
import IsletCore

/// `islet end`: end an activity.
struct End: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "End an activity.")

    @Argument(help: "The activity's id.")
    var id: String

    @OptionGroup var content: ContentOptions

    @Option(help: "When it leaves the Lock Screen: default (up to 4h), immediate, a duration (30m) or at:<Unix time>.")
    var dismiss = "default"

    @Option(help: "The end's Unix timestamp.")
    var timestamp: Double?

    @Flag(name: .shortAndLong, help: "Print nothing on success.")
    var quiet = false

    @OptionGroup var options: ClientOptions

    func run() async throws {
        let end = EndRequest(
            content: try content.content(), dismissalPolicy: try parseDismissal(dismiss),
            timestamp: timestamp.map(Date.init(timeIntervalSince1970:))
        )
        let activity = try await options.run { try await $0.end(id, end) }
        if !quiet { Output(json: options.json).activity(activity) }
    }
}
