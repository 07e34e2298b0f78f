import ArgumentParser
import AsyncHTTPClient
import Crypto
import Foundation
import IsletAPNs
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// `islet-bench apns`: acknowledged pushes per second through Islet's APNs-compatible endpoint
/// (HTTP/2 over TLS, a provider JWT), as a provider sends them.
struct APNsPushes: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apns", abstract: "Acknowledged Live Activity pushes per second over HTTP/2 + TLS (POST /3/device/<token>)."
    )

    @OptionGroup var systems: Systems

    @Option(help: "Activities (pushType token) pushed to, each owned by one stream so its timestamps increase.")
    var activities = 1000

    @Option(help: "HTTP/2 connection counts to measure (comma-separated).")
    var connections = "1,8"

    @Option(help: "Concurrent streams per connection (requests in flight on it).")
    var streams = 100

    @Option(help: "Seconds measured for each connection count (after a warm-up of a fifth of it, at least 2 s).")
    var seconds = 10.0

    @OptionGroup var store: StoreChoice

    @Flag(inversion: .prefixedNo, help: "Strict pushes: a push the device would drop answers 400 instead of 200, so every 200 was applied.")
    var strict = true

    @Flag(
        inversion: .prefixedNo,
        help: "Also push, the same way, to a sink that answers 200 at once (islet-bench sink): the most this client and HTTP/2 over TLS reach here."
    )
    var ceiling = true

    @Option(
        help: "nghttp2's h2load: also push to the same Islet with it, at the largest connection count (apt-get install nghttp2-client). Its body is fixed, so after the first push to each activity the same timestamp is refused (strict) or dropped: it measures answers, not applied pushes."
    )
    var h2load: String?

    @Option(
        help: "A Python 3 with aioapns (pip install aioapns): also push to the same Islet with Benchmarks/peers/aioapns_sender.py, a plain asyncio sender with nothing durable behind it, at the largest connection count and the same streams per connection."
    )
    var aioapns: String?

    private static let bundleId = "com.bench.apns"

    func validate() throws {
        let counts = try countList(connections, option: "--connections")
        guard streams > 0 else { throw ValidationError("--streams must be positive.") }
        guard activities >= counts.max()! * streams else {
            throw ValidationError("--activities must be at least connections × streams (\(counts.max()! * streams)): one stream per activity at a time.")
        }
    }

    func run() async throws {
        let server = try await systems.startIslet(durability: store.durability, apns: true)
        defer {
            server.stop()
        }
        guard let apnsPort = server.apnsPort else { throw HarnessError("the APNs endpoint did not say its port") }
        let provider = try await Provider.register(on: server, bundleId: Self.bundleId, strict: strict)
        let tokens = try await Provider.pushTokens(activities, port: server.port, key: provider.appKey)
        print(
            "apns \(server.name): POST /3/device/<token> on https://127.0.0.1:\(apnsPort) (trusting <data>/tls/ca.pem), apns-priority 5"
                + " (spends no push budget, so no budget setting is changed; Islet emulates no TooManyRequests), one JWT reused;"
                + " strict pushes \(strict ? "on: a push the device would drop answers 400, so a 200 was applied" : "off: a dropped push still answers 200");"
                + " \(grouped(Double(activities))) activities, activity limits raised; only 200 counts"
        )
        let ca = server.directory.appendingPathComponent("data/tls/ca.pem").path
        for count in try countList(connections, option: "--connections") {
            let result = try await measure(server, apnsPort: apnsPort, ca: ca, connections: count, tokens: tokens, jwt: provider.jwt)
            print(result.line)
        }
        if let h2load {
            let count = try countList(connections, option: "--connections").max()!
            print(try await measureWithH2load(h2load, server, apnsPort: apnsPort, connections: count, tokens: tokens, jwt: provider.jwt))
        }
        if let aioapns {
            let count = try countList(connections, option: "--connections").max()!
            print(try await measureWithAioapns(aioapns, server, apnsPort: apnsPort, connections: count, tokens: tokens, provider: provider))
        }
        guard ceiling else { return }
        server.stop()
        try await measureCeiling(tokens: tokens, jwt: provider.jwt)
    }

    /// The same pushes to a sink that stores nothing and answers 200 at once: what the client,
    /// HTTP/2 and TLS take on this machine, the APNs endpoint's ceiling.
    private func measureCeiling(tokens: [String], jwt: String) async throws {
        let sink = try await systems.startSink()
        defer { sink.stop() }
        let ca = sink.directory.appendingPathComponent("cert.pem").path
        for count in try countList(connections, option: "--connections") {
            let result = try await measure(sink, apnsPort: sink.port, ca: ca, connections: count, tokens: tokens, jwt: jwt)
            print(result.line)
        }
    }

    /// h2load's requests a second against the same endpoint, the same tokens (a URI each, in
    /// turn), headers and JWT: `<N> req/s` and its status classes, with the server's CPU.
    private func measureWithH2load(
        _ h2load: String, _ server: ServerUnderTest, apnsPort: Int, connections: Int, tokens: [String], jwt: String
    ) async throws -> String {
        let folder = server.directory
        let uris = folder.appendingPathComponent("h2load-uris.txt")
        try tokens.map { "https://127.0.0.1:\(apnsPort)/3/device/\($0)" }.joined(separator: "\n").write(to: uris, atomically: true, encoding: .utf8)
        let body = folder.appendingPathComponent("h2load-body.json")
        let timestamp = Int(Date().timeIntervalSince1970)
        try #"{"aps":{"event":"update","timestamp":\#(timestamp),"content-state":{"speed":1}}}"#.write(to: body, atomically: true, encoding: .utf8)
        let warmUp = max(2, seconds / 5)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: h2load)
        process.arguments = [
            "-D", String(Int(seconds)), "--warm-up-time", String(Int(warmUp)), "-c", String(connections), "-m", String(streams),
            "-i", uris.path, "-d", body.path, "-H", "authorization: bearer \(jwt)", "-H", "apns-topic: \(Self.bundleId).push-type.liveactivity",
            "-H", "apns-push-type: liveactivity", "-H", "apns-priority: 5", "-H", "content-type: application/json",
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0, let rate = text.firstMatch(of: /finished in [^,]+, ([0-9.]+) req\/s/)?.1,
            let codes = text.firstMatch(of: /status codes: ([^\n]+)/)?.1
        else { throw HarnessError("h2load failed:\n\(text)") }
        return "apns \(server.name) by h2load, \(connections) connection\(connections == 1 ? "" : "s") × \(streams) streams, \(Int(seconds)) s after \(Int(warmUp)) s:"
            + " \(grouped(Double(rate) ?? 0)) requests/s answered (\(codes); one fixed body: after the first push to an activity, its timestamp is not newer)"
    }

    /// aioapns's pushes answered 200 a second against the same endpoint and tokens, with the
    /// server's CPU and the sender's own.
    private func measureWithAioapns(
        _ python: String, _ server: ServerUnderTest, apnsPort: Int, connections: Int, tokens: [String], provider: Provider
    ) async throws -> String {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("peers/aioapns_sender.py")
        let warmUp = max(2, seconds / 5)
        let plan = try JSONSerialization.data(withJSONObject: [
            "host": "127.0.0.1", "port": apnsPort, "ca": server.directory.appendingPathComponent("data/tls/ca.pem").path,
            "key": provider.privateKey, "keyId": provider.keyId, "teamId": provider.teamId,
            "topic": "\(Self.bundleId).push-type.liveactivity", "tokens": tokens, "concurrency": connections * streams,
            "connections": connections, "seconds": seconds, "warmUp": warmUp,
        ] as [String: Any])
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [script.path]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = output
        try process.run()
        input.fileHandleForWriting.write(plan)
        try input.fileHandleForWriting.close()
        try await Task.sleep(for: .seconds(warmUp))
        let meter = CPUMeter(server)
        // Read to its end on a thread of its own, not one of the task pool's.
        let text = await withCheckedContinuation { (done: CheckedContinuation<String, Never>) in
            Thread { done.resume(returning: String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)) }.start()
        }
        let cpu = meter.use()
        process.waitUntilExit()
        guard process.terminationStatus == 0, let line = text.split(separator: "\n").last,
            let result = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
            let rate = result["rate"] as? Double, let senderCPU = result["cpu"] as? Double
        else { throw HarnessError("aioapns_sender.py failed:\n\(text)") }
        let others = (result["others"] as? [String: Int] ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key) ×\($0.value)" }
        return "apns \(server.name) by aioapns (Python, asyncio), \(connections) connection\(connections == 1 ? "" : "s") × \(streams) in flight,"
            + " \(Int(seconds)) s after \(Int(warmUp)) s: \(grouped(rate)) pushes/s acknowledged"
            + " (server CPU \(Int(cpu.server * 100))%, the sender's CPU \(Int(senderCPU * 100))%\(others.isEmpty ? "" : "; not 200: " + others.joined(separator: ", ")))"
    }

    struct Result {
        var system: String
        var connections: Int
        var open: Int
        var streams: Int
        var rate: Double
        var errors: [String: Int]
        var cpu: CPUUse

        var line: String {
            let refused = errors.sorted { $0.key < $1.key }.map { "\($0.key) ×\($0.value)" }.joined(separator: ", ")
            return "apns \(system) \(connections) connection\(connections == 1 ? "" : "s") × \(streams) streams"
                + " (\(open) open on the server): \(grouped(rate)) pushes/s acknowledged"
                + " (\(cpu.text)\(refused.isEmpty ? "" : "; not 200: \(refused)"))"
        }
    }

    private func measure(
        _ server: ServerUnderTest, apnsPort: Int, ca: String, connections: Int, tokens: [String], jwt: String
    ) async throws -> Result {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .file(ca)
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.httpVersion = .automatic
        // One connection per client: HTTP/2 reuses it for every stream once it is up.
        configuration.connectionPool = .init(idleTimeout: .seconds(120), concurrentHTTP1ConnectionsPerHostSoftLimit: 1)
        configuration.timeout = .init(connect: .seconds(5), read: .seconds(30))
        let clients = (0..<connections).map { _ in HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration) }
        do {
            let result = try await measure(server, apnsPort: apnsPort, clients: clients, tokens: tokens, jwt: jwt)
            for client in clients { try await client.shutdown() }
            return result
        } catch {
            for client in clients { try? await client.shutdown() }
            throw error
        }
    }

    private func measure(_ server: ServerUnderTest, apnsPort: Int, clients: [HTTPClient], tokens: [String], jwt: String) async throws -> Result {
        let connections = clients.count

        let url = "https://127.0.0.1:\(apnsPort)/3/device/"
        let topic = "\(Self.bundleId).push-type.liveactivity"
        @Sendable func push(_ client: HTTPClient, token: String, sequence: Int) async throws -> String? {
            var request = HTTPClientRequest(url: url + token)
            request.method = .POST
            request.headers.add(name: "authorization", value: "bearer \(jwt)")
            request.headers.add(name: "apns-topic", value: topic)
            request.headers.add(name: "apns-push-type", value: "liveactivity")
            request.headers.add(name: "apns-priority", value: "5")
            let timestamp = String(format: "%.6f", Date().timeIntervalSince1970)
            let state = PayloadSize.tiny.state(sequence: sequence)
            request.body = .bytes(ByteBuffer(string: #"{"aps":{"event":"update","timestamp":\#(timestamp),"content-state":\#(state)}}"#))
            let response = try await client.execute(request, timeout: .seconds(30))
            let body = try await response.body.collect(upTo: 1 << 16)
            guard response.status != .ok else { return nil }
            let reason = (try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any])?["reason"] as? String
            return "\(response.status.code) \(reason ?? "")"
        }
        // Each connection up before the streams start, so each client holds exactly one.
        for (index, client) in clients.enumerated() {
            if let refused = try await push(client, token: tokens[index], sequence: 0) { throw HarnessError("first push: \(refused)") }
        }

        let lanes = connections * streams
        let clock = ContinuousClock()
        // At least 2 s: the first wave of streams × connections pushes can take that long to come back.
        let start = clock.now.advanced(by: .seconds(max(2, seconds / 5)))
        let end = start.advanced(by: .seconds(seconds))
        var meter: CPUMeter?
        var open = 0
        let tallies = try await withThrowingTaskGroup(of: [String: Int].self) { group in
            for lane in 0..<lanes {
                let client = clients[lane % connections]
                let mine = stride(from: lane, to: tokens.count, by: lanes).map { tokens[$0] }
                group.addTask {
                    var tally: [String: Int] = [:]
                    var sequence = 0
                    while clock.now < end {
                        let token = mine[sequence % mine.count]
                        sequence += 1
                        let outcome: String?
                        do {
                            outcome = try await push(client, token: token, sequence: sequence)
                        } catch {
                            outcome = "\(type(of: error))"
                        }
                        let finished = clock.now
                        guard finished >= start, finished < end else { continue }
                        tally[outcome ?? "200", default: 0] += 1
                    }
                    return tally
                }
            }
            try await Task.sleep(until: start, clock: clock)
            meter = CPUMeter(server)
            open = Self.establishedConnections(toPort: apnsPort)
            return try await group.reduce(into: [:]) { $0.merge($1, uniquingKeysWith: +) }
        }
        let cpu = meter!.use()
        var errors = tallies
        let acknowledged = errors.removeValue(forKey: "200") ?? 0
        return Result(
            system: server.name, connections: connections, open: open, streams: streams, rate: Double(acknowledged) / seconds,
            errors: errors, cpu: cpu
        )
    }

    /// Established TCP connections whose local port is `port` (the server's side), from
    /// /proc/net/tcp, read line by line to its end (it can be far longer than one read).
    static func establishedConnections(toPort port: Int) -> Int {
        let hex = String(format: ":%04X", port)
        var count = 0
        for path in ["/proc/net/tcp", "/proc/net/tcp6"] {
            guard let file = fopen(path, "r") else { continue }
            defer { fclose(file) }
            var line: UnsafeMutablePointer<CChar>?
            var capacity = 0
            defer { free(line) }
            while getline(&line, &capacity, file) > 0, let line {
                let fields = String(cString: line).split(separator: " ")
                if fields.count > 3, fields[1].hasSuffix(hex), fields[3] == "01" { count += 1 }
            }
        }
        return count
    }
}

/// A provider as Islet knows it: an app, its registered P-256 key, and a JWT signed with it.
struct Provider {
    var appKey: String
    var jwt: String
    /// The .p8 key's PEM, its id and team: what a sender of its own (another Islet) signs with.
    var privateKey: String
    var keyId: String
    var teamId: String

    /// Creates the app, registers a fresh key (and strict mode, when asked), signs a JWT.
    static func register(on server: ServerUnderTest, bundleId: String, strict: Bool) async throws -> Provider {
        let connection = try await HTTPConnection.connect(port: server.port)
        let appKey = try await IsletSetup.app(on: connection, admin: try server.adminKey, bundleId: bundleId)
        let privateKey = P256.Signing.PrivateKey().pemRepresentation
        let (keyId, teamId) = ("BENCHKEY01", "BENCHTEAM1")
        let body = try JSONSerialization.data(withJSONObject: ["keyId": keyId, "teamId": teamId, "privateKey": privateKey])
        let headers = [("Authorization", "Bearer \(appKey)")]
        let (status, answer) = try await connection.send(.POST, "/v1/apps/\(bundleId)/keys", headers: headers, body: ByteBuffer(bytes: body))
        guard status == 201 else { throw HarnessError("registering the provider key: \(status) \(String(buffer: answer))") }
        if strict {
            let (status, answer) = try await connection.send(
                .PATCH, "/v1/apps/\(bundleId)", headers: headers, body: ByteBuffer(string: #"{"strictPushes":true}"#)
            )
            guard status == 200 else { throw HarnessError("strict mode: \(status) \(String(buffer: answer))") }
        }
        await connection.close()
        let jwt = try await ProviderTokenSigner(p8: privateKey, keyId: keyId, teamId: teamId).token()
        return Provider(appKey: appKey, jwt: jwt, privateKey: privateKey, keyId: keyId, teamId: teamId)
    }

    /// Starts `count` activities with `pushType: "token"`; returns their push tokens.
    ///
    /// - Parameter device: The device each activity is on (by index); the server's default device if `nil`.
    static func pushTokens(
        _ count: Int, port: Int, key: String, device: (@Sendable (Int) -> String)? = nil
    ) async throws -> [String] {
        try await IsletSetup.inLanes(count, port: port) { connection, index in
            let on = device.map { #""device":"\#($0(index))","# } ?? ""
            let body = #"{\#(on)"attributesType":"Bench","attributes":{},"pushType":"token","content":{"state":{"speed":0,"seq":0}}}"#
            let (status, answer) = try await connection.send(
                .POST, "/v1/activities", headers: [("Authorization", "Bearer \(key)")], body: ByteBuffer(string: body)
            )
            guard status == 201, let json = try JSONSerialization.jsonObject(with: Data(answer.readableBytesView)) as? [String: Any],
                let token = json["pushToken"] as? String
            else { throw HarnessError("starting an activity with a push token: \(status) \(String(buffer: answer))") }
            return token
        }
    }
}
