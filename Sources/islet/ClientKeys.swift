import ArgumentParser
import Foundation
import IsletClient
import IsletCore

/// `islet apps client-keys`: an app's publishable keys (docs/installations.md).
extension Apps {
    struct ClientKeys: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "client-keys",
            abstract: "An app's client keys (pk_…), which its builds ship: each registers installations of the app, and nothing else.",
            discussion: "How a shipped app reaches Islet with one: docs/installations.md.",
            subcommands: [Add.self, List.self, Remove.self, VerificationSecret.self], defaultSubcommand: List.self
        )

        struct Add: AsyncParsableCommand {
            static let configuration = CommandConfiguration(commandName: "add", abstract: "Make a client key and print it (shown only this once).")

            @Argument(help: "The app's bundle identifier.")
            var bundleId: String

            @Option(help: "A name for people, such as the builds that ship it.")
            var name: String?

            @Flag(name: .shortAndLong, help: "Print only the key.")
            var quiet = false

            @OptionGroup var options: ClientOptions

            func run() async throws {
                let made = try await options.run { try await $0.createClientKey(bundleId: bundleId, name: name) }
                if quiet { return print(made.key) }
                if options.json { return Output(json: true).encoded(made) }
                print("Client key \(made.clientKey.id) of \(bundleId): \(made.key)")
                print("Put it in the app (it is public: it registers installations, nothing else); it is not shown again.")
            }
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(commandName: "list", abstract: "An app's client keys, revoked ones too.")

            @Argument(help: "The app's bundle identifier.")
            var bundleId: String

            @OptionGroup var options: ClientOptions

            func run() async throws {
                let keys = try await options.run { try await $0.clientKeys(bundleId: bundleId) }
                let output = Output(json: options.json)
                if options.json { return output.encoded(["clientKeys": keys]) }
                if keys.isEmpty { return print("\(bundleId) has no client keys. Make one with: islet apps client-keys add \(bundleId)") }
                output.table(["ID", "KEY", "NAME", "MADE", "LAST USED", "INSTALLATIONS", "REVOKED"], keys.map { key in
                    [
                        key.id, key.prefix + "…", key.name, Output.time(key.createdAt), key.lastUsedAt.map(Output.time) ?? "-", "\(key.installations)",
                        key.revokedAt.map(Output.time) ?? "-",
                    ]
                })
            }
        }

        struct Remove: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "rm", abstract: "Revoke a client key: it registers nothing from then on; its installations keep working unless cut."
            )

            @Argument(help: "The app's bundle identifier.")
            var bundleId: String

            @Argument(help: "The key's id (ck_…), as list shows it.")
            var id: String

            @Flag(help: "Revoke the credentials of the installations it registered too (a leaked build).")
            var cutInstallations = false

            @OptionGroup var options: ClientOptions

            func run() async throws {
                let revoked = try await options.run { try await $0.revokeClientKey(bundleId: bundleId, id: id, cutInstallations: cutInstallations) }
                if options.json { return Output(json: true).encoded(revoked) }
                print("Revoked \(revoked.clientKey.id) of \(bundleId)." + (cutInstallations ? " \(revoked.installationsCut) installations cut." : ""))
            }
        }

        struct VerificationSecret: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "user-verification-secret",
                abstract: "Make the secret the app's backend signs its users' ids with (replacing the earlier), and print it once.",
                discussion: """
                    Without one, no installation is taken as a user's phone on the app's word: the backend signs \
                    a user's id (hex HMAC-SHA256 of the id under this secret) and hands it to its app as \
                    userIdSignature (docs/installations.md).
                    """
            )

            @Argument(help: "The app's bundle identifier.")
            var bundleId: String

            @OptionGroup var options: ClientOptions

            func run() async throws {
                let made = try await options.run { try await $0.replaceUserVerificationSecret(bundleId: bundleId) }
                if options.json { return Output(json: true).encoded(made) }
                print(made.secret)
            }
        }
    }
}
