import ArgumentParser
import IsletClient
import IsletCore

/// `islet apps`: create and list apps (producers).
struct Apps: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create and list apps.", subcommands: [Create.self, ListApps.self], defaultSubcommand: ListApps.self
    )

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "create", abstract: "Create an app and print its API key (shown only this once)."
        )

        @Argument(help: "The app's bundle identifier, such as com.example.bike.")
        var bundleId: String

        @Option(help: "A name for people.")
        var name: String?

        @Flag(name: .shortAndLong, help: "Print only the API key.")
        var quiet = false

        @OptionGroup var options: ClientOptions

        func run() async throws {
            let created = try await options.run { try await $0.createApp(bundleId: bundleId, name: name) }
            if quiet { return print(created.apiKey) }
            if options.json {
                struct Created: Encodable { var app: App; var apiKey: String }
                return Output(json: true).print(Created(app: created.app, apiKey: created.apiKey))
            }
            print("Created \(created.app.bundleId).")
            print("API key (shown only now; keep it): \(created.apiKey)")
            print("Use it with: export ISLET_KEY=\(created.apiKey)")
        }
    }

    struct ListApps: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List apps.")

        @OptionGroup var options: ClientOptions

        func run() async throws {
            let apps = try await options.run { try await $0.apps() }
            let output = Output(json: options.json)
            if options.json { return output.print(["apps": apps]) }
            if apps.isEmpty { return print("No apps. Create one with: islet apps create com.example.app") }
            output.table(["BUNDLE ID", "NAME", "CREATED"], apps.map { [$0.bundleId, $0.name, Output.time($0.createdAt)] })
        }
    }
}
