import ArgumentParser
import AsyncHTTPClient
import Foundation
import IsletClient
import IsletCore
import NIOCore

/// The options every command that talks to a server shares.
struct ClientOptions: ParsableArguments {
    @Option(help: "The server's URL (env ISLET_URL; default http://127.0.0.1:8080).")
    var server: String?

    @Option(help: "An API key (env ISLET_KEY; default: the admin key in the data directory).")
    var key: String?

    @Option(name: .customLong("data"), help: "The server's data directory, to find the admin key (default .islet).")
    var dataDirectory: String?

    @Flag(help: "Print JSON instead of tables, for scripts.")
    var json = false

    var environment: [String: String] { ProcessInfo.processInfo.environment }

    /// The app a command acts as: the one named, or `ISLET_APP` (what the admin key acts as).
    static func app(_ named: String?) -> BundleID? {
        named ?? ProcessInfo.processInfo.environment["ISLET_APP"].flatMap { $0.isEmpty ? nil : $0 }
    }

    var serverURL: String {
        server ?? environment["ISLET_URL"] ?? "http://127.0.0.1:8080"
    }

    /// The key to send: explicit, from the environment, or the local admin key.
    var resolvedKey: String? {
        if let key { return key }
        if let key = environment["ISLET_KEY"], !key.isEmpty { return key }
        return localAdminKey
    }

    /// The admin key in the data directory, on the server's machine.
    var localAdminKey: String? {
        try? String(contentsOfFile: adminKeyPath, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// These options, sending the local admin key unless `--key` names one — even when
    /// `ISLET_KEY` holds an app's key: for commands that act beyond one app (a demo creates its own).
    var preferringAdminKey: ClientOptions {
        var options = self
        if options.key == nil, let admin = localAdminKey { options.key = admin }
        return options
    }

    var adminKeyPath: String {
        let directory = dataDirectory ?? environment["ISLET_STORE_DATA_DIRECTORY"] ?? ".islet"
        return (directory as NSString).appendingPathComponent("admin.key")
    }

    /// Runs a call against the server, printing a refusal and exiting with its exit code.
    ///
    /// A server that cannot be reached fails at once rather than being retried: the CLI
    /// answers within the connect timeout, and `watch` does its own reconnecting.
    func run<T>(_ body: (IsletClient) async throws -> T) async throws -> T {
        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(connect: .seconds(5), read: .seconds(60))
        configuration.connectionPool.retryConnectionEstablishment = false
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let result: Result<T, any Error>
        do {
            result = .success(try await body(IsletClient(server: serverURL, key: resolvedKey, http: http)))
        } catch {
            result = .failure(error)
        }
        try? await http.shutdown()
        do {
            return try result.get()
        } catch let error as ClientError {
            Output(json: json).fail(error, keyHint: resolvedKey == nil ? adminKeyPath : nil)
            throw ExitCode(error.exitCode)
        }
    }
}

extension ClientError {
    /// The exit code scripts can switch on (documented in `islet --help`).
    var exitCode: Int32 {
        switch self {
        case .refused(let status, _), .unexpected(let status, _):
            switch status {
            case 401, 403: 3
            case 404: 4
            case 409: 5
            case 500...: 6
            default: 1
            }
        case .unreachable: 7
        }
    }
}
