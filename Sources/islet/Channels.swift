import ArgumentParser
import Foundation
import IsletClient
import IsletCore

/// `islet channels`: an app's broadcast channels, and broadcasts to them (docs/api.md;
/// for an app that delivers to real phones, made at Apple too: docs/delivery.md).
struct Channels: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "An app's broadcast channels: list, create, delete, and broadcast an update or an end to one.",
        subcommands: [ListChannels.self, CreateChannel.self, DeleteChannel.self, Broadcast.self], defaultSubcommand: ListChannels.self
    )

    struct ListChannels: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List an app's channels.")

        @OptionGroup var app: AppOption
        @OptionGroup var options: ClientOptions

        func run() async throws {
            let channels = try await options.run { client in try await client.channels(bundleId: try await app.bundleId(client)) }
            let output = Output(json: options.json)
            if options.json { return output.encoded(["channels": channels]) }
            output.table(
                ["ID", "STORAGE", "AT APPLE", "CREATED"],
                channels.map { [$0.id, $0.storagePolicy == 1 ? "latest kept 8 h" : "none", $0.environment?.rawValue ?? "", Output.time($0.createdAt)] }
            )
        }
    }

    struct CreateChannel: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "create",
            abstract: "Create a channel (at Apple first, when the app delivers to real phones) and print its id."
        )

        @Option(help: "0: no message stored; 1: the most recent message kept 8 h for activities that join later.")
        var storagePolicy = 0

        @Option(help: "For an app that delivers in both environments: the one the channel is made in at Apple.")
        var environment: APNsEnvironment?

        @Flag(name: .shortAndLong, help: "Print only the channel's id.")
        var quiet = false

        @OptionGroup var app: AppOption
        @OptionGroup var options: ClientOptions

        func run() async throws {
            let channel = try await options.run { client in
                try await client.createChannel(bundleId: try await app.bundleId(client), storagePolicy: storagePolicy, environment: environment)
            }
            if quiet { return print(channel.id) }
            if options.json { return Output(json: true).encoded(channel) }
            print("Channel \(channel.id) of \(channel.bundleId)\(channel.environment.map { ", made at Apple (\($0.rawValue))" } ?? "").")
        }
    }

    struct DeleteChannel: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "delete", abstract: "Delete a channel (at Apple too, when it was made there)."
        )

        @Argument(help: "The channel's id.")
        var id: String

        @OptionGroup var app: AppOption
        @OptionGroup var options: ClientOptions

        func run() async throws {
            try await options.run { client in try await client.deleteChannel(bundleId: try await app.bundleId(client), id: id) }
            print("Deleted channel \(id).")
        }
    }

    struct Broadcast: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "broadcast",
            abstract: "Broadcast an update (or, with --end, an end) to every activity joined to a channel — and, for a channel made at Apple, to every phone on it in one request."
        )

        @Argument(help: "The channel's id.")
        var id: String

        @OptionGroup var content: ContentOptions
        @OptionGroup var alert: AlertOptions

        @Flag(help: "End the activities instead of updating them.")
        var end = false

        @Option(help: "With --end: when they leave the Lock Screen: default (up to 4h), immediate, a duration (30m) or at:<Unix time>.")
        var dismiss = "default"

        @OptionGroup var app: AppOption
        @OptionGroup var options: ClientOptions

        func validate() throws {
            if !end, content.state == nil { throw ValidationError("Give the new content state with --state '{…}' (or --end).") }
        }

        func run() async throws {
            let change: Activity.PushedChange
            if end {
                change = .end(EndRequest(content: try content.content(), dismissalPolicy: try parseDismissal(dismiss)))
            } else {
                change = .update(ContentUpdate(content: try content.content()!, alert: try alert.alert()))
            }
            let reached = try await options.run { client in
                try await client.broadcast(bundleId: try await app.bundleId(client), channelId: id, BroadcastBody(change))
            }
            let output = Output(json: options.json)
            if options.json { return output.encoded(["activities": reached]) }
            output.count(reached.count, end ? "ended here" : "updated here")
        }
    }
}
