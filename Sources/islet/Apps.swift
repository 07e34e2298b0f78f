import ArgumentParser
import Foundation
import IsletAPNs
import IsletClient
import IsletCore

/// `islet apps`: create and list apps (producers).
struct Apps: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create and list apps; register their provider keys; turn strict pushes on or off.",
        subcommands: [Create.self, ListApps.self, AddKey.self, Strict.self], defaultSubcommand: ListApps.self
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

    struct AddKey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add-key",
            abstract: "Register a provider's .p8 key for an app's APNs-style JWTs (only its public half is sent)."
        )

        @Argument(help: "The app's bundle identifier.")
        var bundleId: String

        @Option(help: "The .p8 key file.")
        var keyFile: String

        @Option(help: "The key id (default: from the file name AuthKey_<KEYID>.p8).")
        var keyId: String?

        @Option(help: "The team id.")
        var teamId: String

        @OptionGroup var options: ClientOptions

        func run() async throws {
            guard let keyId = keyId ?? Push.keyId(fromFileName: keyFile) else {
                throw ValidationError("Give --key-id (the file is not named AuthKey_<KEYID>.p8).")
            }
            guard let p8 = try? String(contentsOfFile: keyFile, encoding: .utf8),
                let publicKey = try? ProviderTokenSigner.publicKey(ofP8: p8)
            else {
                throw CommandFailure("\(keyFile) is not a readable ES256 .p8 key.")
            }
            let key = try await options.run {
                try await $0.addProviderKey(bundleId: bundleId, keyId: keyId, teamId: teamId, publicKey: publicKey)
            }
            if options.json { return Output(json: true).print(key) }
            print("Registered key \(key.keyId) (team \(key.teamId)) for \(key.bundleId).")
        }
    }

    struct Strict: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "strict",
            abstract: "Make pushes a device would drop silently fail with 400 and the reason (for CI), or not."
        )

        @Argument(help: "The app's bundle identifier.")
        var bundleId: String

        @Argument(help: "on or off.")
        var setting: Devices.Settings.Toggle

        @OptionGroup var options: ClientOptions

        func run() async throws {
            let app = try await options.run { try await $0.setStrictPushes(setting == .on, bundleId: bundleId) }
            if options.json { return Output(json: true).print(app) }
            print("Strict pushes for \(app.bundleId): \(app.strictPushes ? "on" : "off").")
        }
    }
}
