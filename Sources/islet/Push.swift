import ArgumentParser
import AsyncHTTPClient
import Foundation
import IsletAPNs
import IsletClient
import IsletCore
import NIOCore
import NIOSSL

/// `islet push`: sends an APNs-format Live Activity push, as a provider would.
struct Push: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send an APNs-format Live Activity push (HTTP/2, JWT from a .p8 key).",
        discussion: """
            Sends POST /3/device/<token> to Islet's APNs-compatible endpoint (https://127.0.0.1:2197, \
            trusting <data>/tls/ca.pem), or to any APNs-compatible server given with --host. With \
            --channel, sends a broadcast to /4/broadcasts/apps/<app> instead.

            The payload is --payload (JSON inline, @file or -), or built from --event, --state and \
            the other payload flags. The provider token is signed from --key-file (a .p8), with \
            --key-id (default: from the file name AuthKey_<KEYID>.p8) and --team-id.

            Exit codes: 0 accepted (200), 1 refused (4xx; the reason is printed), 6 server error, \
            7 unreachable, 64 usage.
            """
    )

    @Argument(help: "The activity's push token or the device's push-to-start token (not with --channel).")
    var token: String?

    @Option(help: "The app's bundle id: the topic (… .push-type.liveactivity is added) or the broadcast's app.")
    var app: String

    @Option(help: "A broadcast channel id: broadcast instead of pushing to a token.")
    var channel: String?

    @Option(help: "The whole payload as JSON (inline, @file or -); the payload flags are ignored.")
    var payload: String?

    @Option(help: "aps.event: start, update or end.")
    var event: String = "update"

    @Option(help: "aps.content-state as JSON.")
    var state: String?

    @Option(help: "aps.timestamp (Unix seconds); default: now.")
    var timestamp: Double?

    @Option(help: "aps.stale-date (Unix seconds).")
    var staleDate: Double?

    @Option(help: "aps.relevance-score.")
    var relevance: Double?

    @Option(help: "aps.dismissal-date (Unix seconds), with --event end.")
    var dismissalDate: Double?

    @Option(help: "aps.alert.title.")
    var alertTitle: String?

    @Option(help: "aps.alert.body.")
    var alertBody: String?

    @Option(help: "aps.attributes-type, with --event start.")
    var attributesType: String?

    @Option(help: "aps.attributes as JSON, with --event start.")
    var attributes: String?

    @Flag(help: "aps.input-push-token: 1, with --event start.")
    var inputPushToken = false

    @Option(help: "apns-priority: 10 (default) or 5.")
    var priority: Int?

    @Option(help: "apns-expiration (Unix seconds). Broadcasts default to 0: a channel that keeps its latest message keeps it only with a later expiration.")
    var expiration: Int?

    @Option(help: "The .p8 key file (env ISLET_APNS_KEY_FILE).")
    var keyFile: String?

    @Option(help: "The key id (env ISLET_APNS_KEY_ID; default: from AuthKey_<KEYID>.p8).")
    var keyId: String?

    @Option(help: "The team id (env ISLET_APNS_TEAM_ID).")
    var teamId: String?

    @Option(help: "The endpoint (env ISLET_APNS_URL; default https://127.0.0.1:2197).")
    var host: String?

    @Option(help: "A CA certificate to trust (PEM); default: Islet's development CA in --data, if there.")
    var ca: String?

    @Option(name: .customLong("data"), help: "The server's data directory, for its development CA (default .islet).")
    var dataDirectory: String?

    @Flag(help: "Print the response as JSON.")
    var json = false

    func validate() throws {
        if channel == nil, token == nil { throw ValidationError("Give the token to push to, or --channel for a broadcast.") }
        if channel != nil, token != nil { throw ValidationError("A broadcast (--channel) has no token.") }
        if payload == nil, state == nil, event != "end" { throw ValidationError("Give --state (the content state) or --payload.") }
    }

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        let signer = try await Self.signer(keyFile: keyFile, keyId: keyId, teamId: teamId)
        let body = try payloadData()
        let server = host ?? environment["ISLET_APNS_URL"] ?? "https://127.0.0.1:2197"
        var headers: [(String, String)] = []
        if let priority { headers.append(("apns-priority", "\(priority)")) }
        if let expiration { headers.append(("apns-expiration", "\(expiration)")) }

        let trusted = Self.authority(ca: ca, dataDirectory: dataDirectory)
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: Self.clientConfiguration(trusting: trusted))
        let result: Result<APNsClient.Response, any Error>
        do {
            let client = APNsClient(server: server, http: http)
            let jwt = try await signer.token()
            if let channel {
                result = .success(try await client.broadcast(
                    bundleId: app, channelId: channel, payload: body, providerToken: jwt, extraHeaders: headers
                ))
            } else {
                result = .success(try await client.push(
                    token: token!, topic: app, payload: body, providerToken: jwt, extraHeaders: headers
                ))
            }
        } catch {
            result = .failure(error)
        }
        try? await http.shutdown()
        let response: APNsClient.Response
        do {
            response = try result.get()
        } catch let error as ClientError {
            Terminal.error("error: \(error)")
            if case .untrusted = error {
                let what = trusted.map { "\($0) and the system's authorities" } ?? "the system's authorities only (no --ca, and no \(Self.defaultAuthority(dataDirectory)))"
                Terminal.error("""
                    hint: this push trusted \(what). For an Islet, trust the authority in its data directory: \
                    --ca <its data>/tls/ca.pem, or --data <its data directory>.
                    """)
            }
            throw ExitCode(7)
        }
        if json {
            struct Printed: Encodable {
                var status: Int
                var apnsId: String?
                var reason: String?
                var timestamp: Int64?
                var detail: String?
            }
            Output(json: true).encoded(Printed(
                status: response.status, apnsId: response.requestId, reason: response.reason,
                timestamp: response.timestamp, detail: response.detail
            ))
        } else {
            print(response)
        }
        switch response.status {
        case 200..<300: return
        case 500...: throw ExitCode(6)
        default: throw ExitCode(1)
        }
    }

    /// The payload: given whole, or built from the flags.
    private func payloadData() throws -> Data {
        if let payload {
            return try WireFormat.encoder().encode(try parseJSON(payload, option: "--payload"))
        }
        var aps: [String: JSONValue] = [
            "event": .string(event), "timestamp": .number(timestamp ?? Date().timeIntervalSince1970.rounded()),
        ]
        if let state { aps["content-state"] = try parseJSON(state, option: "--state") }
        if let staleDate { aps["stale-date"] = .number(staleDate) }
        if let relevance { aps["relevance-score"] = .number(relevance) }
        if let dismissalDate { aps["dismissal-date"] = .number(dismissalDate) }
        if alertTitle != nil || alertBody != nil {
            aps["alert"] = ["title": .string(alertTitle ?? ""), "body": .string(alertBody ?? "")]
        }
        if let attributesType { aps["attributes-type"] = .string(attributesType) }
        if let attributes { aps["attributes"] = try parseJSON(attributes, option: "--attributes") }
        if inputPushToken { aps["input-push-token"] = 1 }
        return try WireFormat.encoder().encode(JSONValue.object(["aps": .object(aps)]))
    }

    /// The authority a push trusts besides the system's: `ca`, or Islet's development CA in the
    /// data directory when there.
    static func authority(ca: String?, dataDirectory: String?) -> String? {
        let development = defaultAuthority(dataDirectory)
        return ca ?? (FileManager.default.fileExists(atPath: development) ? development : nil)
    }

    /// Where an Islet's development CA is: `<data>/tls/ca.pem`.
    static func defaultAuthority(_ dataDirectory: String?) -> String {
        ((dataDirectory ?? ProcessInfo.processInfo.environment["ISLET_STORE_DATA_DIRECTORY"] ?? ".islet") as NSString)
            .appendingPathComponent("tls/ca.pem")
    }

    /// An HTTP/2 client's settings for an APNs endpoint, trusting `authority` besides the
    /// system's roots (so `--host api.sandbox.push.apple.com` still verifies).
    static func clientConfiguration(trusting authority: String?) -> HTTPClient.Configuration {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let authority {
            tls.additionalTrustRoots = [.file(authority)]
        }
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.timeout = .init(connect: .seconds(5), read: .seconds(30))
        configuration.connectionPool.retryConnectionEstablishment = false
        return configuration
    }

    /// The provider token signer from the options or the ISLET_APNS_* environment.
    static func signer(keyFile: String?, keyId: String?, teamId: String?) async throws -> ProviderTokenSigner {
        let environment = ProcessInfo.processInfo.environment
        guard let keyFile = keyFile ?? environment["ISLET_APNS_KEY_FILE"] else {
            throw ValidationError("Give the provider's .p8 key with --key-file (or ISLET_APNS_KEY_FILE).")
        }
        guard let teamId = teamId ?? environment["ISLET_APNS_TEAM_ID"] else {
            throw ValidationError("Give the team id with --team-id (or ISLET_APNS_TEAM_ID).")
        }
        guard let keyId = keyId ?? environment["ISLET_APNS_KEY_ID"] ?? Self.keyId(fromFileName: keyFile) else {
            throw ValidationError("Give the key id with --key-id (the file is not named AuthKey_<KEYID>.p8).")
        }
        guard let p8 = try? String(contentsOfFile: keyFile, encoding: .utf8) else {
            throw CommandFailure("Cannot read \(keyFile).")
        }
        do {
            return try await ProviderTokenSigner(p8: p8, keyId: keyId, teamId: teamId)
        } catch {
            throw CommandFailure("\(keyFile) is not an ES256 .p8 key: \(error)")
        }
    }

    /// The key id given, or the one the key file's name carries (`AuthKey_<KEYID>.p8`).
    static func keyId(_ given: String?, file path: String) throws -> String {
        guard let keyId = given ?? keyId(fromFileName: path) else {
            throw ValidationError("Give --key-id (the file is not named AuthKey_<KEYID>.p8).")
        }
        return keyId
    }

    static func keyId(fromFileName path: String) -> String? {
        let name = (path as NSString).lastPathComponent
        guard name.hasPrefix("AuthKey_"), name.hasSuffix(".p8") else { return nil }
        return String(name.dropFirst("AuthKey_".count).dropLast(3))
    }
}

/// `islet jwt`: prints an APNs provider token, for curl and other hand-made requests.
struct JWT: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jwt", abstract: "Print an APNs provider token (ES256 JWT) signed with a .p8 key; valid for an hour."
    )

    @Option(help: "The .p8 key file (env ISLET_APNS_KEY_FILE).")
    var keyFile: String?

    @Option(help: "The key id (env ISLET_APNS_KEY_ID; default: from the file name AuthKey_<KEYID>.p8).")
    var keyId: String?

    @Option(help: "The team id (env ISLET_APNS_TEAM_ID).")
    var teamId: String?

    func run() async throws {
        print(try await Push.signer(keyFile: keyFile, keyId: keyId, teamId: teamId).token())
    }
}
