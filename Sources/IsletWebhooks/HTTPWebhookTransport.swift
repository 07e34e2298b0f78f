import AsyncHTTPClient
import Foundation
import IsletCore
import IsletEngine
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle
import Synchronization

/// Sends webhook requests over HTTP/1.1 or HTTP/2 (async-http-client), as docs/webhooks.md
/// says: signed (Standard Webhooks), to an address checked when the request connects — the
/// name is resolved here, each address checked (`WebhookURL.refusal(of:)`), and the client
/// connects to the one that passed (`dnsOverride`), so a name that resolves elsewhere by then
/// (DNS rebinding) changes nothing — redirects not followed, the response read up to 4 KB.
public final class HTTPWebhookTransport: WebhookTransport, Service {
    /// The most of a response read; the attempt log keeps its first bytes, without tokens
    /// (`WebhookAttempt.kept`).
    static let readLimit = 4_096

    private let allowPrivateNetworks: Bool
    private let logger: Logger
    /// A client per name and the address it connects to (async-http-client overrides a name's
    /// address per client).
    private let clients = Mutex([String: HTTPClient]())
    private let stopped = Atomic<Bool>(false)

    public init(allowPrivateNetworks: Bool, logger: Logger) {
        self.allowPrivateNetworks = allowPrivateNetworks
        self.logger = logger
    }

    /// How long closing every connection may take at shutdown: a receiver that took the
    /// connection, chose HTTP/2 and never sent its first `SETTINGS` holds async-http-client's
    /// shutdown without a bound; it is left to the process's exit, and a line says so.
    static let closeTimeout: Duration = .seconds(2)

    public func run() async throws {
        try? await gracefulShutdown()
        stopped.store(true, ordering: .relaxed)
        let clients = clients.withLock { clients in defer { clients = [:] }; return Array(clients.values) }
        let closes = clients.map { client -> @Sendable () async -> Void in { try? await client.shutdown() } }
        let left = await closeAll(within: Self.closeTimeout, closes)
        if left > 0 {
            logger.notice("Shutdown: \(left) webhook connection\(left == 1 ? "" : "s") did not close within \(Self.closeTimeout); left to the process's exit")
        }
    }

    /// Sends one request, within one deadline from resolving the name to the answer's last byte
    /// read (`webhooks.timeout`): a receiver that sends its head at once and a byte now and then
    /// is cut off when the time is up, as is a name that takes that long to resolve.
    public func send(_ event: WebhookEvent, to endpoint: WebhookEndpoint, at time: Date, timeout: TimeInterval) async -> WebhookAnswer {
        let started = ContinuousClock.now
        func elapsed() -> Double { (ContinuousClock.now - started) / .milliseconds(1) }
        let limit = Duration.milliseconds(Int64(timeout * 1_000))
        do {
            let url = try WebhookURL(endpoint.url, allowPrivateNetworks: allowPrivateNetworks)
            guard let (status, response) = try await waitAtMost(limit, { try await self.exchange(event, to: endpoint, url: url, at: time, within: limit) }) else {
                return WebhookAnswer(status: nil, error: Self.late(timeout), latencyMs: elapsed(), response: nil)
            }
            return WebhookAnswer(status: status, error: nil, latencyMs: elapsed(), response: response)
        } catch let error as IsletError {
            return WebhookAnswer(status: nil, error: error.message, latencyMs: elapsed(), response: nil)
        } catch {
            return WebhookAnswer(status: nil, error: Self.describe(error, timeout: timeout), latencyMs: elapsed(), response: nil)
        }
    }

    /// The request and its answer: the status and the first `readLimit` bytes of the body.
    private func exchange(
        _ event: WebhookEvent, to endpoint: WebhookEndpoint, url: WebhookURL, at time: Date, within limit: Duration
    ) async throws -> (Int, String) {
        let address = try await Self.address(of: url, allowPrivateNetworks: allowPrivateNetworks)
        let client = try client(for: url, address: address, limit: limit)
        var request = HTTPClientRequest(url: url.text)
        request.method = .POST
        let signed = SignedWebhook(event, for: endpoint, at: time)
        request.headers.add(name: "User-Agent", value: "Islet-Webhooks/1")
        for (name, value) in signed.headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(bytes: signed.body))
        let response = try await client.execute(request, timeout: TimeAmount(limit))
        var read = ByteBuffer()
        for try await chunk in response.body {
            var chunk = chunk
            read.writeBuffer(&chunk)
            if read.readableBytes >= Self.readLimit { break }
        }
        let first = read.readSlice(length: min(read.readableBytes, Self.readLimit)).map { String(decoding: $0.readableBytesView, as: UTF8.self) } ?? ""
        return (Int(response.status.code), first)
    }

    /// The address a request to `url` connects to: the written one, or the first the name
    /// resolves to that may be reached; refused (naming the address) when none may.
    static func address(of url: WebhookURL, allowPrivateNetworks: Bool) async throws -> [UInt8] {
        let candidates: [[UInt8]]
        if let address = url.address {
            candidates = [address]
        } else {
            candidates = try await NIOThreadPool.singleton.runIfActive { try resolve(url.host, port: url.port) }
        }
        var refusals: [String] = []
        for address in candidates {
            guard let refusal = url.refusal(of: address, allowPrivateNetworks: allowPrivateNetworks) else { return address }
            refusals.append(refusal)
        }
        throw IsletError(.invalidRequest, "refused: \(url.host) resolves to \(refusals.first ?? "no address")")
    }

    /// Every address `host` resolves to (getaddrinfo), IPv4 first.
    private static func resolve(_ host: String, port: Int) throws -> [[UInt8]] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            throw IsletError(.invalidRequest, "\(host) does not resolve (\(String(cString: gai_strerror(status))))")
        }
        defer { freeaddrinfo(first) }
        var v4: [[UInt8]] = []
        var v6: [[UInt8]] = []
        for entry in sequence(first: first, next: { $0.pointee.ai_next }) {
            guard let address = entry.pointee.ai_addr else { continue }
            switch Int32(address.pointee.sa_family) {
            case AF_INET:
                address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4.append(withUnsafeBytes(of: $0.pointee.sin_addr) { Array($0) }) }
            case AF_INET6:
                address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6.append(withUnsafeBytes(of: $0.pointee.sin6_addr) { Array($0) }) }
            default: break
            }
        }
        return v4 + v6
    }

    private func client(for url: WebhookURL, address: [UInt8], limit: Duration) throws -> HTTPClient {
        let ip = IPAddressClass.text(address)
        let key = "\(url.host)|\(ip)"
        return try clients.withLock { clients in
            if let client = clients[key] { return client }
            guard !stopped.load(ordering: .relaxed) else { throw IsletError(.unavailable, "the server is stopping") }
            var configuration = HTTPClient.Configuration(
                redirectConfiguration: .disallow,
                timeout: .init(connect: TimeAmount(limit), read: TimeAmount(limit))
            )
            // A name, or an IPv4 address spelled otherwise (`0x7f.1`): connect to the address checked.
            if url.address == nil || (address.count == 4 && url.host != ip) { configuration.dnsOverride = [url.host: ip] }
            let client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
            clients[key] = client
            return client
        }
    }

    private static func late(_ timeout: TimeInterval) -> String {
        "no answer within \(timeout.formatted(.number.precision(.fractionLength(0...3)))) s"
    }

    private static func describe(_ error: any Error, timeout: TimeInterval) -> String {
        switch error {
        case let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout:
            late(timeout)
        case let error as HTTPClientError: "\(error)"
        default: "\(error)"
        }
    }
}
