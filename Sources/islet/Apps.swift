import ArgumentParser
import Foundation
import IsletAPNs
import IsletClient
import IsletCore

/// `islet apps`: create and list apps (producers).
struct Apps: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create and list apps; register their provider keys; turn strict pushes on or off; set up delivery to real iPhones.",
        subcommands: [Create.self, NewKey.self, ListApps.self, AddKey.self, RevokeKey.self, Strict.self, Delivery.self, FCM.self, ClientKeys.self, Installations.self],
        defaultSubcommand: ListApps.self
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
            let created: CreatedApp
            do {
                created = try await options.run { client in
                    do {
                        return try await client.createApp(bundleId: bundleId, name: name)
                    } catch ClientError.refused(403, let refusal) {
                        // Only the admin creates apps. A key that is this very app's — the tour's
                        // `export ISLET_KEY=$(islet apps create … -q)` run twice in one shell —
                        // means the app exists, and that is what to say.
                        guard try await client.apps().map(\.bundleId) == [bundleId] else { throw ClientError.refused(status: 403, refusal) }
                        throw ClientError.refused(status: 409, IsletError(.appAlreadyExists, "An app \(bundleId) already exists: the key given is its own."))
                    }
                }
            } catch let code as ExitCode where code.rawValue == 5 {
                // A script reading the key gets nothing; say so, and what gives one.
                Terminal.error("""
                    hint: an app's key is shown only when the app is made\(quiet ? ", so nothing was printed (a variable set from it is empty)" : ""). \
                    For a new key for \(bundleId) (its earlier one stops working): export ISLET_KEY=$(islet apps key \(bundleId) -q)
                    """)
                throw code
            }
            Self.show(created, saying: "Created \(created.app.bundleId).", quiet: quiet, json: options.json)
        }

        /// Prints an app's new key: alone with `-q`, as JSON with `--json`, or with how to use it.
        static func show(_ created: CreatedApp, saying what: String, quiet: Bool, json: Bool) {
            if quiet { return print(created.apiKey) }
            if json {
                struct Created: Encodable { var app: App; var apiKey: String }
                return Output(json: true).encoded(Created(app: created.app, apiKey: created.apiKey))
            }
            print(what)
            print("API key (shown only now; keep it): \(created.apiKey)")
            print("Use it with: export ISLET_KEY=\(created.apiKey)")
        }
    }

    struct NewKey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "key", abstract: "Give an app a new API key (the old one stops working) and print it: for a lost key."
        )

        @Argument(help: "The app's bundle identifier.")
        var bundleId: String

        @Flag(name: .shortAndLong, help: "Print only the API key.")
        var quiet = false

        @OptionGroup var options: ClientOptions

        func run() async throws {
            let issued = try await options.run { try await $0.issueAppKey(bundleId: bundleId) }
            Create.show(issued, saying: "A new key for \(issued.app.bundleId); the earlier one no longer works.", quiet: quiet, json: options.json)
        }
    }

    struct ListApps: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List apps.")

        @OptionGroup var options: ClientOptions

        func run() async throws {
            let apps = try await options.run { try await $0.apps() }
            let output = Output(json: options.json)
            if options.json { return output.encoded(["apps": apps]) }
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

        @Option(help: "topic (the default: it counts against the 200 topic-specific keys) or team (at most 2 per environment).")
        var kind: KeyScope?

        @Option(help: "The environment the key is limited to (default: both, as a key made before 2025).")
        var environment: APNsEnvironment?

        @OptionGroup var options: ClientOptions

        func run() async throws {
            let keyId = try Push.keyId(keyId, file: keyFile)
            guard let p8 = try? String(contentsOfFile: keyFile, encoding: .utf8),
                let publicKey = try? ProviderTokenSigner.publicKey(ofP8: p8)
            else {
                throw CommandFailure("\(keyFile) is not a readable ES256 .p8 key.")
            }
            let key = try await options.run {
                try await $0.addProviderKey(
                    bundleId: bundleId, keyId: keyId, teamId: teamId, publicKey: publicKey, kind: kind, environment: environment
                )
            }
            if options.json { return Output(json: true).encoded(key) }
            print("Registered key \(key.keyId) (team \(key.teamId)) for \(key.bundleId).")
        }
    }

    struct RevokeKey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "revoke-key",
            abstract: "Revoke a provider key registered with add-key: tokens it signed are refused (403 InvalidProviderToken) from now on."
        )

        @Argument(help: "The app's bundle identifier.")
        var bundleId: String

        @Argument(help: "The key id.")
        var keyId: String

        @OptionGroup var options: ClientOptions

        func run() async throws {
            try await options.run { try await $0.deleteProviderKey(bundleId: bundleId, keyId: keyId) }
            if options.json { return Output(json: true).encoded(["bundleId": bundleId, "keyId": keyId, "revoked": "true"]) }
            print("Key \(keyId) is revoked for \(bundleId): tokens it signed are refused from now on.")
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
            if options.json { return Output(json: true).encoded(app) }
            print("Strict pushes for \(app.bundleId): \(app.strictPushes ? "on" : "off").")
        }
    }

    struct Delivery: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "delivery",
            abstract: "Deliver an app's changes to real iPhones through Apple's APNs: its keys, and a rotation from one key to the next.",
            subcommands: [Configure.self, AddKey.self, RemoveKey.self, Rotate.self], defaultSubcommand: Configure.self
        )
    }
}

extension Apps.Delivery {
    struct Configure: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set",
            abstract: "An app's credentials for one environment (replacing the keys it had); --off to stop; no option to show its keys.",
            discussion: """
                The .p8 key is sent to the server, which keeps it in its data directory, readable by \
                its own user only, and never shows it again. Development tokens go to Apple's sandbox, \
                production ones to its production host; --url sends to another APNs-compatible host \
                (another Islet's endpoint, with --ca-file its authority). How delivery works: docs/delivery.md.
                """
        )

        @Argument(help: "The app's bundle identifier.")
        var bundleId: String

        @Option(help: "The team id (10 characters).")
        var teamId: String?

        @Option(help: "The key id (default: from the file name AuthKey_<KEYID>.p8).")
        var keyId: String?

        @Option(help: "The .p8 key file.")
        var keyFile: String?

        @Option(help: "Which tokens the key serves: development or production.")
        var environment: APNsEnvironment?

        @Option(help: "Send to this APNs-compatible host instead of Apple's (https://host:port).")
        var url: String?

        @Option(help: "The certificate authority (PEM) to trust for --url.")
        var caFile: String?

        @Flag(help: "Stop delivering (in --environment only, when given).")
        var off = false

        @OptionGroup var options: ClientOptions

        func validate() throws {
            if off {
                guard teamId == nil, keyId == nil, keyFile == nil, url == nil, caFile == nil else {
                    throw ValidationError("--off takes no credentials (only --environment).")
                }
            } else if keyFile != nil || teamId != nil {
                guard keyFile != nil, teamId != nil, environment != nil else {
                    throw ValidationError("Give --team-id, --key-file and --environment together.")
                }
            }
            if caFile != nil, url == nil { throw ValidationError("--ca-file is the authority for --url: give --url too.") }
        }

        func run() async throws {
            let output = Output(json: options.json)
            if off {
                try await options.run { try await $0.deleteDeliveryCredentials(bundleId: bundleId, environment: environment) }
                if options.json { return output.encoded(["bundleId": bundleId, "delivery": "off"]) }
                return print("Delivery for \(bundleId)\(environment.map { " (\($0.rawValue))" } ?? "") is off; what waits stays in the outbox.")
            }
            if let keyFile, let teamId, let environment {
                let keyId = try Push.keyId(keyId, file: keyFile)
                guard let privateKey = try? String(contentsOfFile: keyFile, encoding: .utf8) else {
                    throw CommandFailure("Cannot read \(keyFile).")
                }
                var ca: String?
                if let caFile {
                    guard let text = try? String(contentsOfFile: caFile, encoding: .utf8) else { throw CommandFailure("Cannot read \(caFile).") }
                    ca = text
                }
                let body = DeliveryCredentialBody(
                    teamId: teamId, keyId: keyId, privateKey: privateKey, environment: environment, url: url, caCertificate: ca
                )
                let credential = try await options.run { try await $0.putDeliveryCredential(bundleId: bundleId, body) }
                if options.json { return output.encoded(credential) }
                return print("Delivery for \(bundleId) (\(environment.rawValue)): key \(credential.keyId) of team \(credential.teamId), to \(credential.pushServer).")
            }
            let credentials = try await options.run { try await $0.deliveryCredentials(bundleId: bundleId) }
            if options.json { return output.encoded(["credentials": credentials]) }
            if credentials.isEmpty { return print("\(bundleId) delivers nowhere: give it credentials with --team-id, --key-file and --environment.") }
            let signing = Set(APNsEnvironment.allCases.compactMap { Self.signer(of: credentials, in: $0)?.keyId })
            output.table(
                ["ENVIRONMENT", "KEY", "KIND", "TEAM", "SENDS TO", "SINCE", "STATE"],
                credentials.map { key in
                    [
                        key.environment.rawValue, key.keyId, key.kind == .topic ? "topic: \((key.topics ?? []).joined(separator: " "))" : "team",
                        key.teamId, key.pushServer, Output.time(key.createdAt),
                        key.failure.map { "refused: \($0)" } ?? (signing.contains(key.keyId) ? "signs" : "ok"),
                    ]
                }
            )
        }

        /// The key that signs in an environment, as the server chooses it (`KeySet.signer`).
        static func signer(of keys: [DeliveryCredential], in environment: APNsEnvironment) -> DeliveryCredential? {
            KeySet.signer(
                keys.filter { $0.environment == environment }, createdAt: { $0.createdAt.timeIntervalSince1970 }, keyId: \.keyId,
                refused: { $0.failure != nil }
            )
        }
    }

    /// The options that name a key and its file.
    struct KeyOptions: ParsableArguments {
        @Option(help: "The team id (10 characters).")
        var teamId: String

        @Option(help: "The .p8 key file.")
        var keyFile: String

        @Option(help: "The key id (default: from the file name AuthKey_<KEYID>.p8).")
        var keyId: String?

        @Option(help: "Which tokens the key serves: development or production.")
        var environment: APNsEnvironment

        @Option(help: "team (signs for every topic of the team) or topic (for --topics only).")
        var kind: KeyScope?

        @Option(help: "A topic-specific key's topics, bundle ids separated by commas (default: the app's).")
        var topics: String?

        @Option(help: "A topic-specific key's related key id.")
        var relatedKeyId: String?

        /// The body that registers the key.
        func body() throws -> DeliveryCredentialBody {
            let keyId = try Push.keyId(keyId, file: keyFile)
            guard let privateKey = try? String(contentsOfFile: keyFile, encoding: .utf8) else {
                throw CommandFailure("Cannot read \(keyFile).")
            }
            return DeliveryCredentialBody(
                teamId: teamId, keyId: keyId, privateKey: privateKey, environment: environment, kind: kind,
                topics: topics.map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }, relatedKeyId: relatedKeyId
            )
        }
    }

    struct AddKey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add-key",
            abstract: "Add a key to an app's set for its environment: being the newest, it signs from now on (docs/delivery.md, \"Key sets\")."
        )

        @Argument(help: "The app's bundle identifier.")
        var bundleId: String

        @OptionGroup var key: KeyOptions
        @OptionGroup var options: ClientOptions

        func run() async throws {
            let body = try key.body()
            let added = try await options.run { try await $0.addDeliveryKey(bundleId: bundleId, body) }
            if options.json { return Output(json: true).encoded(added) }
            print("Key \(added.keyId) (\(added.kind.rawValue)) signs \(bundleId)'s \(added.environment.rawValue) pushes from now on, to \(added.pushServer).")
        }
    }

    struct RemoveKey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "remove-key",
            abstract: "Remove a key from an app's set: the newest key left signs."
        )

        @Argument(help: "The app's bundle identifier.")
        var bundleId: String

        @Argument(help: "The key id.")
        var keyId: String

        @Option(help: "Only in this environment.")
        var environment: APNsEnvironment?

        @OptionGroup var options: ClientOptions

        func run() async throws {
            try await options.run { try await $0.deleteDeliveryKey(bundleId: bundleId, keyId: keyId, environment: environment) }
            if options.json { return Output(json: true).encoded(["bundleId": bundleId, "keyId": keyId, "removed": "true"]) }
            print("Key \(keyId) no longer signs for \(bundleId).")
        }
    }

    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate",
            abstract: "Move an app's environment to a new key without a failed push: add it (it signs from then on), remove the key it replaces, then revoke that one at Apple.",
            discussion: """
                The new key takes the kind, topics and related key of the one it replaces unless told. \
                Requests already signed with the old key are answered as before: Apple still takes \
                it until you revoke it in the developer portal, which this command tells you to do last.
                """
        )

        @Argument(help: "The app's bundle identifier.")
        var bundleId: String

        @OptionGroup var key: KeyOptions

        @Option(help: "The key it replaces (default: the one signing now).")
        var replacing: String?

        @OptionGroup var options: ClientOptions

        func run() async throws {
            let output = Output(json: options.json)
            let keys = try await options.run { try await $0.deliveryKeys(bundleId: bundleId) }
            guard let old = replacing.flatMap({ id in keys.first { $0.keyId == id && $0.environment == key.environment } })
                ?? Configure.signer(of: keys, in: key.environment)
            else {
                throw CommandFailure("\(bundleId) has no \(key.environment.rawValue) key to rotate from: give it one with islet apps delivery \(bundleId) --team-id … --key-file … --environment \(key.environment.rawValue).")
            }
            var body = try key.body()
            guard body.keyId != old.keyId else { throw ValidationError("The new key is \(old.keyId) already: rotate to another key.") }
            body.kind = body.kind ?? old.kind
            if body.kind == .topic {
                body.topics = body.topics ?? old.topics
                body.relatedKeyId = body.relatedKeyId ?? old.relatedKeyId
            }
            let added = try await options.run { try await $0.addDeliveryKey(bundleId: bundleId, body) }
            try await options.run { try await $0.deleteDeliveryKey(bundleId: bundleId, keyId: old.keyId, environment: key.environment) }
            if options.json { return output.encoded(["bundleId": bundleId, "from": old.keyId, "to": added.keyId]) }
            print("""
                \(bundleId) (\(key.environment.rawValue)): key \(added.keyId) signs from now on; \(old.keyId) is removed from Islet.
                Requests signed with \(old.keyId) before now are answered as usual. Last, revoke \(old.keyId) at Apple
                (developer portal: Certificates, Identifiers & Profiles → Keys).
                """)
        }
    }
}

extension APNsEnvironment: ExpressibleByArgument {}
extension KeyScope: ExpressibleByArgument {}
extension DevicePlatform: ExpressibleByArgument {}
