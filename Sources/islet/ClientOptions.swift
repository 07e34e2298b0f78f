import ArgumentParser
import AsyncHTTPClient
import Foundation
import IsletClient
import IsletCore
import IsletServer
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

    /// The key to send and where it came from: `--key`, then `ISLET_KEY` — an explicit key always
    /// wins — then the admin key in the data directory, but only to the server that keeps it
    /// there (`AdminKeyAddress`): never to whatever other server `--server` or `ISLET_URL` names.
    var keyChoice: (key: String?, source: KeySource) {
        if let key { return (key, .option) }
        if let key = environment["ISLET_KEY"], !key.isEmpty { return (key, .environment) }
        guard let admin = localAdminKey, !admin.isEmpty else { return (nil, .none(why: nil)) }
        guard let recorded = AdminKeyAddress.recorded(in: dataDirectoryPath) else {
            return (nil, .none(why: "the admin key in \(adminKeyPath) was not sent: no server has said where it listens beside it (\(AdminKeyAddress.path(in: dataDirectoryPath)) is written when islet serve starts)"))
        }
        guard AdminKeyAddress.matches(serverURL, recorded: recorded) else {
            return (nil, .none(why: "the admin key in \(adminKeyPath) belongs to the server at \(recorded), not to \(serverURL), so it was not sent; pass --key or set ISLET_KEY for \(serverURL)"))
        }
        return (admin, .dataDirectory(adminKeyPath))
    }

    /// The key to send, if any (`keyChoice`).
    var resolvedKey: String? { keyChoice.key }

    /// The admin key in the data directory, on the server's machine.
    var localAdminKey: String? {
        try? String(contentsOfFile: adminKeyPath, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The data directory the CLI reads the admin key from: `--data`, `ISLET_STORE_DATA_DIRECTORY`, `.islet`.
    var dataDirectoryPath: String {
        dataDirectory ?? environment["ISLET_STORE_DATA_DIRECTORY"] ?? ".islet"
    }

    var adminKeyPath: String {
        (dataDirectoryPath as NSString).appendingPathComponent("admin.key")
    }

    /// Runs a call against the server, printing a refusal and exiting with its exit code.
    ///
    /// A server that cannot be reached fails at once rather than being retried: the CLI
    /// answers within the connect timeout, and `watch` does its own reconnecting.
    func run<T>(_ body: (IsletClient) async throws -> T) async throws -> T {
        do {
            return try await attempt(body).get()
        } catch let error as ClientError {
            Output(json: json).fail(error, key: keyChoice)
            throw ExitCode(error.exitCode)
        }
    }

    /// Runs a call against the server and returns what came of it, printing nothing.
    ///
    /// - Parameter withKey: Whether to send the key (`keyChoice`); a server refuses a key it
    ///   does not know even where none is needed.
    func attempt<T>(withKey: Bool = true, _ body: (IsletClient) async throws -> T) async -> Result<T, any Error> {
        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(connect: .seconds(5), read: .seconds(60))
        configuration.connectionPool.retryConnectionEstablishment = false
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let result: Result<T, any Error>
        do {
            result = .success(try await body(IsletClient(server: serverURL, key: withKey ? resolvedKey : nil, http: http)))
        } catch {
            result = .failure(error)
        }
        try? await http.shutdown()
        return result
    }
}

/// The app a command acts for: `--app`, `ISLET_APP`, or the app the key belongs to.
struct AppOption: ParsableArguments {
    @Option(help: "The app (needed with the admin key; env ISLET_APP).")
    var app: String?

    func bundleId(_ client: IsletClient) async throws -> BundleID {
        if let app = ClientOptions.app(app) { return app }
        let apps = try await client.apps()
        guard apps.count == 1, let own = apps.first else {
            throw ValidationError("With the admin key, name the app: --app <bundleId> (or ISLET_APP).")
        }
        return own.bundleId
    }
}

/// Where the key a command sends comes from: what a refusal and `islet status` say.
enum KeySource: Equatable {
    /// `--key`.
    case option
    /// `ISLET_KEY`.
    case environment
    /// The admin key in the data directory, at this path.
    case dataDirectory(String)
    /// No key; `why` the data directory's admin key was not sent, when there is one.
    case none(why: String?)

    /// The source in words: "ISLET_KEY", "the admin key in .islet/admin.key", "no key".
    var description: String {
        switch self {
        case .option: "--key"
        case .environment: "ISLET_KEY"
        case .dataDirectory(let path): "the admin key in \(path)"
        case .none: "no key"
        }
    }

    /// Whose a key looks like by its prefix (`islet_admin_…`, `islet_app_…`, `islet_device_…`).
    static func kind(of key: String) -> String {
        if key.hasPrefix("islet_admin_") { return "an admin key" }
        if key.hasPrefix("islet_app_") { return "an app's key" }
        if key.hasPrefix("islet_device_") { return "a device's key" }
        if key.hasPrefix("islet_inst_") { return "an installation's credential" }
        if key.hasPrefix(ClientKey.keyPrefix) { return "a client key" }
        return "a key Islet did not make"
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
        case .unreachable, .interrupted, .untrusted: 7
        }
    }
}
