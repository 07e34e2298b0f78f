import Foundation
import ArgumentParser
import IsletClient
import IsletCore

extension Apps {
    /// `islet apps fcm`: an app's FCM credential, for delivery to Android phones.
    struct FCM: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "fcm",
            abstract: "Deliver an app's changes to Android phones through FCM: its service account; --off to stop; no option to show it.",
            discussion: """
                The service-account JSON (Firebase console: Project settings, Service accounts, Generate \
                new private key) is sent to the server, which keeps it in its data directory and never \
                shows its private key again. --url sends to another FCM-compatible host (another Islet's \
                push port, with --ca-file its authority, trusted for the account's token_uri too). How it \
                works: docs/android.md.
                """
        )

        @Argument(help: "The app's bundle identifier.")
        var bundleId: String

        @Option(help: "The service-account JSON file.")
        var serviceAccount: String?

        @Option(help: "Send to this FCM-compatible host instead of Google's (https://host:port).")
        var url: String?

        @Option(help: "The certificate authority (PEM) to trust for --url and the account's token_uri.")
        var caFile: String?

        @Flag(help: "Stop delivering to Android phones.")
        var off = false

        @OptionGroup var options: ClientOptions

        func validate() throws {
            if off, serviceAccount != nil || url != nil || caFile != nil {
                throw ValidationError("--off takes no credential.")
            }
            if serviceAccount == nil, url != nil || caFile != nil {
                throw ValidationError("--url and --ca-file go with --service-account.")
            }
        }

        func run() async throws {
            let output = Output(json: options.json)
            if off {
                try await options.run { try await $0.deleteFCMCredential(bundleId: bundleId) }
                if options.json { return output.encoded(["bundleId": bundleId, "fcm": "off"]) }
                return print("Delivery to Android phones for \(bundleId) is off; what waits stays in the outbox.")
            }
            if let serviceAccount {
                let account = try Self.readJSON(serviceAccount)
                let ca = try caFile.map { file in
                    guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { throw CommandFailure("Cannot read \(file).") }
                    return text
                }
                let credential = try await options.run {
                    try await $0.putFCMCredential(bundleId: bundleId, FCMCredentialBody(serviceAccount: account, url: url, caCertificate: ca))
                }
                if options.json { return output.encoded(credential) }
                return print("Delivery to Android phones for \(bundleId): project \(credential.projectId) as \(credential.clientEmail), to \(credential.url ?? "FCM").")
            }
            let credential = try await options.run { try await $0.fcmCredential(bundleId: bundleId) }
            if options.json { return output.encoded(credential) }
            output.table(
                ["PROJECT", "ACCOUNT", "SENDS TO", "SINCE", "STATE"],
                [[credential.projectId, credential.clientEmail, credential.url ?? "FCM", Output.time(credential.createdAt), credential.failure.map { "refused: \($0)" } ?? "ok"]]
            )
        }

        static func readJSON(_ path: String) throws -> JSONValue {
            guard let data = FileManager.default.contents(atPath: path) else { throw CommandFailure("Cannot read \(path).") }
            guard let json = try? JSONDecoder().decode(JSONValue.self, from: data), json.objectValue != nil else {
                throw CommandFailure("\(path) is not a service-account JSON object.")
            }
            return json
        }
    }
}

/// `islet fcm`: Islet playing Google, for Android backends to be tested against it.
struct FCMCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fcm",
        abstract: "Islet as Google: service accounts that FCM clients (firebase-admin…) use against this server.",
        subcommands: [IssueServiceAccount.self]
    )

    struct IssueServiceAccount: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "service-account",
            abstract: "Print a new service-account JSON, as Google's console downloads one, whose token_uri is this server.",
            discussion: """
                Give it to a provider's unchanged FCM code (firebase-admin, a Go or Node client), pointed at \
                this server's push port and trusting its authority (docs/android.md). The server keeps only \
                the public key: the JSON is printed once. With --output, written to a new file (readable by \
                you only); an existing file is never overwritten.
                """
        )

        @Argument(help: "The Firebase project id: 6 to 30 lower-case letters, digits and hyphens.")
        var project: String

        @Option(help: "The token endpoint to name instead of this server's push port (https://host:port/token).")
        var tokenUri: String?

        @Option(name: .shortAndLong, help: "Write it to this new file instead of printing it.")
        var output: String?

        @OptionGroup var options: ClientOptions

        func run() async throws {
            if let output, FileManager.default.fileExists(atPath: output) {
                throw CommandFailure("\(output) exists; a service account is never written over a file. Name a new one.")
            }
            let account = try await options.run { try await $0.issueServiceAccount(projectId: project, tokenUri: tokenUri) }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            let text = String(decoding: try encoder.encode(account), as: UTF8.self) + "\n"
            guard let output else { return print(text, terminator: "") }
            guard FileManager.default.createFile(atPath: output, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]) else {
                throw CommandFailure("Cannot write \(output).")
            }
            print("Wrote the service account of \(project) to \(output) (token_uri \(account["token_uri"]?.stringValue ?? "?")).")
        }
    }
}
