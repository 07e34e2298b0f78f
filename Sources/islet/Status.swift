import ArgumentParser
import Foundation
import IsletClient
import IsletCore
import IsletServer

/// `islet status`: which server the CLI talks to, with which key (where it came from and whose
/// it is), and the data directory it looks in for the admin key — what to check first when a
/// command is refused.
struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the server, the key and the data directory the CLI uses; or, given an activity, why it shows what it shows.",
        discussion: """
            With an activity's id (or the first characters of it): what its phone last acknowledged, \
            what waits, the app's priority-10 budget on the phone, its renewal and the last refusal \
            (GET /v1/activities/{id}/status).

            Without: the key is --key, else ISLET_KEY, else the admin key in the data directory (--data, \
            ISLET_STORE_DATA_DIRECTORY, .islet) — that one only for the server that keeps it there. \
            Exits 7 when the server cannot be reached, 3 when it does not know the key.
            """,
        aliases: ["whoami"]
    )

    @Argument(help: "An activity's id, or the first characters of it.")
    var activity: String?

    @OptionGroup var options: ClientOptions

    /// What `--json` prints.
    struct Report: Encodable {
        var server: String
        var reachable: Bool
        var version: String?
        var health: String?
        var problem: String?
        var keySource: String
        var keyKind: String?
        var bundleId: String?
        var deviceId: String?
        var keyless: Bool?
        var keyNote: String?
        var dataDirectory: String
        var adminKey: String?
        var adminKeyServer: String?
    }

    func run() async throws {
        if let activity {
            let status = try await options.run { client in try await client.status(activity) }
            if options.json { return Output(json: true).encoded(status) }
            let header = "\(status.id)  \(status.state.rawValue)" + (status.phone.map { "  on \($0.device) (\($0.platform.rawValue))" } ?? "")
            print(([header] + status.summary.map { "  " + $0 }).joined(separator: "\n"))
            return
        }
        let (key, source) = options.keyChoice
        let data = URL(fileURLWithPath: options.dataDirectoryPath).standardizedFileURL.path
        var report = Report(
            server: options.serverURL, reachable: false, keySource: source.description, dataDirectory: data,
            adminKey: options.localAdminKey.map { _ in URL(fileURLWithPath: options.adminKeyPath).standardizedFileURL.path },
            adminKeyServer: AdminKeyAddress.recorded(in: options.dataDirectoryPath)
        )
        if case .none(let why?) = source { report.keyNote = why }
        var exit: Int32 = 0
        switch await options.attempt(withKey: false, { try await $0.health() }) {
        case .success(let health):
            report.reachable = true
            report.version = health["version"]?.stringValue
            report.health = health["status"]?.stringValue
        case .failure(ClientError.refused(let status, let refusal)):
            report.reachable = true
            report.problem = "its health says \(status) \(refusal.reason.rawValue): \(refusal.message)"
        case .failure(let error as ClientError):
            report.problem = "\(error)"
            exit = error.exitCode
        case .failure(let error):
            report.problem = "\(error)"
            exit = 6
        }
        if report.reachable {
            switch await options.attempt({ try await $0.whoami() }) {
            case .success(let identity):
                report.keyKind = identity.kind.rawValue
                report.bundleId = identity.bundleId
                report.deviceId = identity.deviceId
                report.keyless = identity.keyless
                if let message = identity.message { report.keyNote = [report.keyNote, message].compactMap { $0 }.joined(separator: "; ") }
            case .failure(ClientError.refused(401, let refusal)):
                report.keyNote = [report.keyNote, "this server does not know the key: \(refusal.message)"].compactMap { $0 }.joined(separator: "; ")
                exit = 3
            case .failure(let error):
                report.keyNote = [report.keyNote, "whom the key speaks for is unknown: \(error)"].compactMap { $0 }.joined(separator: "; ")
            }
        }
        if options.json {
            Output(json: true).encoded(report)
        } else {
            print(Self.text(report, key: key))
        }
        if exit != 0 { throw ExitCode(exit) }
    }

    /// The report in three lines: the server, the key, the data directory.
    static func text(_ report: Report, key: String?) -> String {
        let server =
            report.reachable && report.problem == nil
            ? "\(report.server) — Islet \(report.version ?? "?"), \(report.health ?? "?")"
            : "\(report.server) — \(report.problem ?? "not reached")"
        var whose: String
        switch report.keyKind {
        case "admin": whose = "the admin key"
        case "app": whose = "an app's key, for \(report.bundleId ?? "?")"
        case "device": whose = "a device's key, for \(report.deviceId ?? "?")"
        case "client": whose = "a client key of \(report.bundleId ?? "?"), which registers installations only"
        case "installation": whose = "an installation's credential, \(report.deviceId ?? "?") of \(report.bundleId ?? "?")"
        case "none":
            whose = report.keyless == true
                ? "without one this server gives this machine the keyless display's and console's rights"
                : "without one this server gives only what needs no key"
        default:
            whose = key.map { KeySource.kind(of: $0) + (report.reachable ? ", by its prefix" : ", by its prefix (not checked: the server was not reached)") } ?? ""
        }
        let keyLine = [report.keySource + (whose.isEmpty ? "" : " — " + whose), report.keyNote].compactMap { $0 }.joined(separator: "\n         ")
        let admin =
            report.adminKey.map { path in
                "admin key \(path)" + (report.adminKeyServer.map { ", for the server at \($0)" } ?? ", for no server yet (islet serve records where it listens)")
            } ?? "no admin key there"
        return """
            server:  \(server)
            key:     \(keyLine)
            data:    \(report.dataDirectory) — \(admin)
            """
    }
}
