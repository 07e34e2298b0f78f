import ArgumentParser
import Foundation
import Hummingbird
import HummingbirdHTTP2
import HTTPTypes
import IsletCore
import IsletDelivery
import IsletEngine
import Logging
import NIOSSL

/// `islet-bench delivery-send`: how many APNs requests a second Islet's sender makes over one
/// HTTP/2 connection — `PushServiceTransport`, the piece Islet's outbox sends through, with its
/// provider token signed once and reused — side by side against a sink that answers 200 at once
/// (`islet-bench sink`: the most the sender can do here) and against Islet's own APNs endpoint.
struct DeliverySend: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delivery-send",
        abstract: "Outbound APNs requests/s over one HTTP/2 connection: Islet's sender against a 200 sink and against Islet's endpoint."
    )

    @OptionGroup var systems: Systems

    @Option(help: "Requests in flight at once (Islet's delivery.concurrency is 64).")
    var concurrency = 64

    @Option(help: "Seconds measured for each target, after a warm-up of 2 s.")
    var seconds = 10.0

    @Option(help: "Tokens pushed to on Islet's endpoint (activities with push tokens), in turn.")
    var tokens = 1000

    private static let bundleId = "com.bench.send"

    func run() async throws {
        let sink = try await systems.startSink()
        let directory = sink.directory
        defer { sink.stop() }
        let apple = try await systems.startIslet(durability: "full", apns: true, name: "Islet's APNs endpoint")
        defer { apple.stop() }
        let provider = try await Provider.register(on: apple, bundleId: Self.bundleId, strict: false)
        let pushTokens = try await Provider.pushTokens(tokens, port: apple.port, key: provider.appKey)
        print(
            "delivery-send: PushServiceTransport (AsyncHTTPClient, HTTP/2 over TLS, one JWT reused), \(concurrency) requests in flight,"
                + " POST /3/device/<token> apns-priority 5 with a 100-byte update; \(Int(seconds)) s measured per target after 2 s warm-up"
        )
        for (server, ca, targets) in [
            (sink, directory.appendingPathComponent("cert.pem").path, ["0f" + String(repeating: "ab", count: 31)]),
            (apple, apple.directory.appendingPathComponent("data/tls/ca.pem").path, pushTokens),
        ] {
            let credential = StoredCredential(
                credential: DeliveryCredential(
                    bundleId: Self.bundleId, environment: .development, teamId: provider.teamId, keyId: provider.keyId,
                    url: "https://127.0.0.1:\(server === apple ? apple.apnsPort! : server.port)",
                    caCertificate: try String(contentsOfFile: ca, encoding: .utf8), createdAt: Date()
                ),
                privateKey: provider.privateKey
            )
            print(try await measure(server, credential: credential, tokens: targets))
        }
    }

    private func measure(_ server: ServerUnderTest, credential: StoredCredential, tokens: [String]) async throws -> String {
        var logger = Logger(label: "islet-bench")
        logger.logLevel = .error
        let transport = PushServiceTransport(logger: logger)
        let clock = ContinuousClock()
        let start = clock.now.advanced(by: .seconds(2))
        let end = start.advanced(by: .seconds(seconds))
        let port = credential.credential.url.flatMap { URL(string: $0)?.port } ?? 0
        let meter = Box<CPUMeter?>(nil)
        let open = Box(0)
        let tallies = await withTaskGroup(of: [String: Int].self) { group in
            for lane in 0..<concurrency {
                group.addTask {
                    var tally: [String: Int] = [:]
                    var sequence = 0
                    while clock.now < end {
                        let token = tokens[(lane + sequence * concurrency) % tokens.count]
                        sequence += 1
                        let payload = #"{"aps":{"event":"update","timestamp":\#(Int(Date().timeIntervalSince1970)),"content-state":{"speed":\#(sequence % 60),"seq":\#(sequence)}}}"#
                        let answer = await transport.send(OutboundRequest(
                            credential: credential, target: .device(token: token), bundleId: Self.bundleId, payload: payload, priority: 5,
                            expiration: Date().addingTimeInterval(3600), apnsId: UUID().uuidString.lowercased()
                        ))
                        let finished = clock.now
                        guard finished >= start, finished < end else { continue }
                        let key: String
                        if let status = answer.status {
                            key = "\(status)" + (answer.reason.map { " \($0)" } ?? "")
                        } else {
                            key = answer.failure?.description ?? "no answer"
                        }
                        tally[key, default: 0] += 1
                    }
                    return tally
                }
            }
            try? await Task.sleep(until: start, clock: clock)
            meter.value = CPUMeter(server)
            open.value = APNsPushes.establishedConnections(toPort: port)
            return await group.reduce(into: [:]) { $0.merge($1, uniquingKeysWith: +) }
        }
        let cpu = meter.value!.use()
        await transport.shutdown()
        var others = tallies
        let ok = others.removeValue(forKey: "200") ?? 0
        let refused = others.sorted { $0.key < $1.key }.map { "\($0.key) ×\($0.value)" }.joined(separator: ", ")
        let use = "receiver CPU \(Int(cpu.server * 100))%, sender CPU \(Int(cpu.harness * 100))%"
        let plural = open.value == 1 ? "" : "s"
        return "delivery-send → \(server.name): \(grouped(Double(ok) / seconds)) requests/s answered 200 over \(open.value) connection\(plural)"
            + " (\(use)" + (refused.isEmpty ? ")" : "; not 200: \(refused))")
    }
}

/// `islet-bench sink`: an HTTP/2 server over TLS that answers every push 200 at once, with a
/// self-signed certificate for 127.0.0.1 made by openssl in `--directory` (`cert.pem`).
struct Sink: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Serve an HTTP/2 sink that answers every APNs push 200.")

    @Option(help: "Where the certificate and key are made.")
    var directory: String

    @Option(help: "The port (0: a free one).")
    var port = 0

    func run() async throws {
        let cert = directory + "/cert.pem", key = directory + "/key.pem"
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        openssl.arguments = [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
            "-addext", "subjectAltName=IP:127.0.0.1", "-addext", "basicConstraints=critical,CA:TRUE", "-keyout", key, "-out", cert,
        ]
        openssl.standardError = FileHandle.nullDevice
        try openssl.run()
        openssl.waitUntilExit()
        guard openssl.terminationStatus == 0 else { throw HarnessError("openssl could not make the sink's certificate") }
        let tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(cert).map { .certificate($0) }, privateKey: .privateKey(try NIOSSLPrivateKey(file: key, format: .pem))
        )
        let router = Router()
        router.post("/3/device/:token") { request, _ in
            Response(status: .ok, headers: [HTTPField.Name("apns-id")!: request.headers[HTTPField.Name("apns-id")!] ?? ""])
        }
        let app = Application(
            router: router, server: try .http2Upgrade(tlsConfiguration: tls),
            configuration: .init(address: .hostname("127.0.0.1", port: port)),
            onServerRunning: { channel in
                FileHandle.standardOutput.write(Data("sink listening on http://127.0.0.1:\(channel.localAddress?.port ?? 0)\n".utf8))
            }
        )
        try await app.runService()
    }
}
