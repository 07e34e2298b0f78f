import ArgumentParser
import Foundation
import IsletClient
import IsletCore

/// `islet update`: new content for an activity.
struct Update: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Update an activity's content.")

    @Argument(help: "The activity's id, or its first characters.")
    var id: String

    @OptionGroup var content: ContentOptions
    @OptionGroup var alert: AlertOptions

    @Option(help: "The update's Unix timestamp; older than the last applied update means ignored.")
    var timestamp: Double?

    @Flag(name: .shortAndLong, help: "Print nothing on success.")
    var quiet = false

    @OptionGroup var options: ClientOptions

    func validate() throws {
        if content.state == nil { throw ValidationError("Give the new content state with --state '{…}'.") }
    }

    func run() async throws {
        guard let newContent = try content.content() else { return }
        let update = ContentUpdate(
            content: newContent, alert: try alert.alert(), timestamp: timestamp.map(Date.init(timeIntervalSince1970:))
        )
        let activity = try await options.run { try await $0.update(id, update) }
        if !quiet { Output(json: options.json).activity(activity) }
    }
}
