import ArgumentParser
import Foundation
import IsletClient
import IsletCore

extension Apps {
    /// `islet apps installations`: the installations an app's builds registered with its client
    /// keys, and what each reported (docs/installations.md, "Seeing them from the backend").
    struct Installations: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "installations",
            abstract: "The installations of an app (phones that registered with a client key) and what each reported, newest first."
        )

        @Argument(help: "The app's bundle identifier.")
        var bundleId: String

        @Option(help: "Only the installations signed in as this user of the app.")
        var user: String?

        @Flag(name: .shortAndLong, help: "Print only the installations' ids (each is its device's id).")
        var quiet = false

        @OptionGroup var options: ClientOptions

        func run() async throws {
            let reports = try await options.run { try await $0.installations(bundleId: bundleId, user: user) }
            let output = Output(json: options.json)
            if options.json { return output.encoded(["installations": reports]) }
            if quiet { return reports.forEach { print($0.installation.id) } }
            if reports.isEmpty {
                return print("\(bundleId) has no installations\(user.map { " of user \($0)" } ?? ""). An app registers one with a client key: islet apps client-keys add \(bundleId)")
            }
            output.table(["ID", "PLATFORM", "USER", "CLIENT KEY", "REGISTERED", "LAST SEEN", "REPORTED"], reports.map { report in
                let installation = report.installation
                return [
                    installation.id + (installation.revoked ? " (revoked)" : ""), installation.platform.rawValue, installation.userId ?? "-",
                    installation.clientKeyId, Output.time(installation.createdAt), Output.time(installation.lastSeenAt), Self.reported(report.tokens),
                ]
            })
        }

        /// What an installation's current tokens are, in a few words: "push-to-start DeliveryAttributes, 2 update tokens".
        static func reported(_ tokens: [PhoneToken]) -> String {
            let current = tokens.filter { $0.retiredAt == nil }
            var words = current.filter { $0.kind == .pushToStart }.map { "push-to-start \($0.attributesType ?? "?")" }
            let updates = current.filter { $0.kind == .update }.count
            if updates > 0 { words.append(updates == 1 ? "1 update token" : "\(updates) update tokens") }
            if current.contains(where: { $0.kind == .fcm || $0.kind == .fid }) { words.append("FCM") }
            return words.isEmpty ? "nothing yet" : words.joined(separator: ", ")
        }
    }
}
