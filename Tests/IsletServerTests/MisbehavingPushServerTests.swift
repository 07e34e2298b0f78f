import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdHTTP2
import IsletCore
@testable import IsletDelivery
import IsletEngine
import IsletTestSupport
import Logging
import NIOCore
import NIOSSL
import Testing

/// The sender's HTTP/2 connection (`PushConnection`) against a push server that misbehaves: an
/// answer far larger than any of Apple's, and an answer that never comes. Each costs only its
/// own request; the next one on the same transport is answered.
@Suite("A push server that misbehaves", .hangDetector)
struct MisbehavingPushServerTests {
    static let bundleId = "com.example.misbehaving"

    /// The device token that picks what the server does.
    enum Behaviour: String {
        /// 200 with a body of a megabyte.
        case hugeAnswer = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        /// Never answers.
        case silence = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
        /// 200 at once.
        case fine = "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
    }

    /// Runs an HTTP/2 server over TLS (Hummingbird) on a free loopback port, its certificate
    /// signed by a test authority, for the time of `body`, which gets a credential sending to it.
    func withServer(_ body: (StoredCredential) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("islet-misbehaving-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let authority = try TestAuthority(in: directory)
        let issued = try authority.issue(for: ["localhost", "127.0.0.1"])
        let tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(issued.certificate).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: issued.key, format: .pem))
        )
        let router = Router()
        router.post("/3/device/:token") { _, context -> Response in
            switch context.parameters.get("token").flatMap(Behaviour.init) {
            case .hugeAnswer:
                return Response(status: .ok, body: ResponseBody(byteBuffer: ByteBuffer(repeating: UInt8(ascii: "x"), count: 1 << 20)))
            case .silence:
                try await Task.sleep(for: .seconds(3_600))
                return Response(status: .ok)
            case .fine, nil:
                return Response(status: .ok)
            }
        }
        let (ports, listening) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: router, server: try .http2Upgrade(tlsConfiguration: tls), configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in listening.yield(channel.localAddress?.port ?? 0) }
        )
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await app.run() }
            var iterator = ports.makeAsyncIterator()
            let port = try #require(await iterator.next())
            let credential = StoredCredential(
                credential: DeliveryCredential(
                    bundleId: Self.bundleId, environment: .development, teamId: "TEAM123456", keyId: "KEY1234567",
                    url: "https://localhost:\(port)", caCertificate: try String(contentsOfFile: authority.certificate, encoding: .utf8),
                    createdAt: Date()
                ),
                privateKey: P256.Signing.PrivateKey().pemRepresentation
            )
            try await body(credential)
            group.cancelAll()
        }
    }

    func push(_ behaviour: Behaviour, over transport: PushServiceTransport, to credential: StoredCredential) async -> TransportAnswer {
        await transport.send(OutboundRequest(
            credential: credential, target: .device(token: behaviour.rawValue), bundleId: Self.bundleId,
            payload: #"{"aps":{"event":"update","timestamp":1,"content-state":{}}}"#, priority: 5, expiration: nil,
            apnsId: UUID().uuidString.lowercased()
        ))
    }

    @Test func anAnswerOverItsLimitIsAFailureNotAMegabyteHeld() async throws {
        try await withServer { credential in
            let transport = PushServiceTransport(timeout: .seconds(120), connectTimeout: .seconds(120), connections: 1, logger: Logger(label: "test"))
            let huge = await push(.hugeAnswer, over: transport, to: credential)
            #expect(huge.failure?.kind == .other && huge.failure?.description.contains("over 65536 bytes") == true, "\(huge)")
            let next = await push(.fine, over: transport, to: credential)
            #expect(next.status == 200, "\(next)")
            await transport.shutdown()
        }
    }

    @Test func anAnswerThatNeverComesTimesOutAndResetsOnlyItsStream() async throws {
        try await withServer { credential in
            // Long enough for the next request to be answered in, on a loaded machine.
            let transport = PushServiceTransport(timeout: .seconds(20), connectTimeout: .seconds(120), connections: 1, logger: Logger(label: "test"))
            let silent = await push(.silence, over: transport, to: credential)
            #expect(silent.failure?.kind == .timedOut, "\(silent)")
            let next = await push(.fine, over: transport, to: credential)
            #expect(next.status == 200, "\(next)")
            await transport.shutdown()
        }
    }
}
