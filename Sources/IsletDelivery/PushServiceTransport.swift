import AsyncHTTPClient
import Foundation
import IsletAPNs
import IsletCore
import IsletEngine
import Logging
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import ServiceLifecycle
import Synchronization

/// Sends the engine's deliveries to the push services — Apple's APNs (or any APNs-compatible
/// host) and Google's FCM (`FCMTransport.swift`) — over HTTP/2 (async-http-client), with provider
/// tokens and access tokens fetched once and reused. The `islet` command hands it to the server
/// (`PushServiceTransport.open`), as it does the store: the server never names it.
///
/// Requests go over `connections` HTTP/2 connections per host and trusted authority (one
/// async-http-client each, whose connection carries as many streams as the server allows), each
/// request on the one with the fewest in flight, so the work spreads over the event loops. A
/// request whose connection is lost under it (a `GOAWAY`, a reset) is sent once more at once,
/// on another: a delivery is one request in flight for its activity, so its order holds.
///
/// A provider token is signed again after `ReusedProviderToken.refreshAge` (50 minutes: Apple wants
/// between 20 and 60), never sooner — Apple answers `TooManyProviderTokenUpdates` to a provider
/// that changes its token too often — except once, when Apple refuses the token: then it is
/// signed again and the request sent once more.
public final class PushServiceTransport: DeliveryTransport, Service {
    private let clients = Mutex<[ClientKey: [Connection]]>([:])
    private let tokens = ProviderTokens()
    let accessTokens: AccessTokens
    let serviceAccounts = ServiceAccounts()
    let timeout: TimeAmount
    /// How long opening a connection may take (TCP; its TLS handshake is the request's).
    private let connectTimeout: TimeAmount
    private let connections: Int
    private let logger: Logger

    /// One HTTP/2 connection's client, and the requests on it now.
    private final class Connection: Sendable {
        let client: HTTPClient
        let inFlight = Atomic<Int>(0)

        init(_ client: HTTPClient) { self.client = client }
    }

    private struct ClientKey: Hashable {
        var caCertificate: String?
    }

    /// - Parameters:
    ///   - timeout: How long one request may take, from sending to the whole answer.
    ///   - connectTimeout: How long opening a connection may take.
    ///   - connections: HTTP/2 connections per host and trusted authority (`delivery.connections`).
    public init(timeout: TimeAmount = .seconds(30), connectTimeout: TimeAmount = .seconds(10), connections: Int = 1, logger: Logger) {
        self.timeout = timeout
        self.connectTimeout = connectTimeout
        accessTokens = AccessTokens(timeout: timeout)
        self.connections = max(1, connections)
        self.logger = logger
    }

    /// The transport a server sends with (`TransportOpener`).
    @Sendable public static func open(_ options: TransportOptions) -> any DeliveryTransport {
        PushServiceTransport(
            timeout: TimeAmount(options.timeout), connections: options.connections, logger: options.logger
        )
    }

    public func send(_ request: OutboundRequest) async -> TransportAnswer {
        let started = ContinuousClock.now
        var (answer, jwt, used) = await attempt(request, replacing: nil)
        if answer.failure?.kind == .connectionLost {
            // Lost under the request: once more, at once, on another connection.
            (answer, jwt, used) = await attempt(request, replacing: nil, avoiding: used)
        }
        if case .refused(let refusal) = answer.answer, [.expiredProviderToken, .invalidProviderToken].contains(refusal.reason) {
            (answer, _, _) = await attempt(request, replacing: jwt, avoiding: nil)
            answer.providerTokenRefreshed = true
        }
        answer.latency = ContinuousClock.now - started
        return answer
    }

    /// Sends the request once, with the credential's current provider token (a new one when it
    /// is `refused`), on the least busy connection but `avoiding`; returns the answer, the token
    /// it carried and the connection it went on.
    private func attempt(
        _ request: OutboundRequest, replacing refused: String?, avoiding: Connection? = nil
    ) async -> (TransportAnswer, String?, Connection?) {
        let route: Route
        let jwt: String
        let connection: Connection
        do {
            route = try Route(request.credential.credential)
            jwt = try await tokens.token(for: request.credential, replacing: refused)
            connection = try self.connection(for: route, avoiding: avoiding)
        } catch {
            // Nothing was sent, and nothing can be until the credential is registered again.
            let why = (error as? IsletError)?.message ?? "its key cannot sign a provider token (\(error))"
            return (TransportAnswer(.failed(TransportFailure(.unusableCredential, why)), latency: .zero), nil, nil)
        }
        connection.inFlight.add(1, ordering: .relaxed)
        defer { connection.inFlight.subtract(1, ordering: .relaxed) }
        return (await exchange(request, route: route, jwt: jwt, client: connection.client), jwt, connection)
    }

    /// Checks that a credential can be sent with (`DeliveryCredentialCheck`), and that the TLS
    /// library takes its authority as the check did.
    public func check(_ credential: StoredCredential) async throws(IsletError) {
        try await DeliveryCredentialCheck.check(credential.credential, privateKey: credential.privateKey)
        _ = try Route(credential.credential).authorities()
    }

    private func exchange(_ request: OutboundRequest, route: Route, jwt: String, client: HTTPClient) async -> TransportAnswer {
        var http: HTTPClientRequest
        switch request.target {
        case .device(let token):
            http = HTTPClientRequest(url: route.pushServer + "/3/device/" + token)
            http.headers.add(name: "apns-topic", value: request.bundleId + ".push-type.liveactivity")
            http.headers.add(name: "apns-id", value: request.apnsId)
        case .channel(let channelId):
            http = HTTPClientRequest(url: route.pushServer + "/4/broadcasts/apps/" + request.bundleId)
            http.headers.add(name: "apns-channel-id", value: channelId)
            http.headers.add(name: "apns-request-id", value: request.apnsId)
        case .createChannel, .deleteChannel:
            http = HTTPClientRequest(url: route.channelManagementServer + "/1/apps/" + request.bundleId + "/channels")
            http.headers.add(name: "apns-request-id", value: request.apnsId)
        }
        http.method = .POST
        http.headers.add(name: "authorization", value: "bearer \(jwt)")
        switch request.target {
        case .device, .channel:
            http.headers.add(name: "apns-push-type", value: "liveactivity")
            http.headers.add(name: "apns-priority", value: "\(request.priority)")
            http.headers.add(name: "apns-expiration", value: "\(Self.unixSeconds(request.expiration ?? Date()))")
        case .createChannel:
            break
        case .deleteChannel(let channelId):
            http.method = .DELETE
            http.headers.add(name: "apns-channel-id", value: channelId)
        }
        if !request.payload.isEmpty {
            http.headers.add(name: "content-type", value: "application/json")
            http.body = .bytes(ByteBuffer(string: request.payload))
        }
        do {
            let response = try await client.execute(http, timeout: timeout)
            let body = try await response.body.collect(upTo: 64 << 10)
            struct Refusal: Decodable {
                var reason: String?
                var timestamp: Int64?
            }
            let refusal = body.readableBytes > 0 ? try? JSONDecoder().decode(Refusal.self, from: Data(buffer: body)) : nil
            return TransportAnswer(
                APNsAnswer(status: Int(response.status.code), reason: refusal?.reason, timestamp: refusal?.timestamp),
                apnsId: response.headers.first(name: "apns-id") ?? response.headers.first(name: "apns-request-id"),
                channelId: response.headers.first(name: "apns-channel-id"), latency: .zero
            )
        } catch {
            return TransportAnswer(.failed(Self.failure(error)), latency: .zero)
        }
    }

    /// The client for a request to a host with its trusted authority (FCM's requests: `FCMTransport.swift`).
    func client(for route: Route) throws(IsletError) -> HTTPClient {
        try connection(for: route, avoiding: nil).client
    }

    /// The connection for a request to a host with its trusted authority: of its `connections`,
    /// made on first use, the one with the fewest requests in flight but `avoiding`.
    private func connection(for route: Route, avoiding: Connection?) throws(IsletError) -> Connection {
        let key = ClientKey(caCertificate: route.caCertificate)
        var pool = clients.withLock { $0[key] } ?? []
        if pool.isEmpty { pool = try makePool(key, route: route) }
        let candidates = pool.count > 1 ? pool.filter { $0 !== avoiding } : pool
        return candidates.min { $0.inFlight.load(ordering: .relaxed) < $1.inFlight.load(ordering: .relaxed) }!
    }

    /// Makes a pool's clients, unless another request made them first.
    private func makePool(_ key: ClientKey, route: Route) throws(IsletError) -> [Connection] {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let authorities = try route.authorities() {
            tls.trustRoots = .certificates(authorities)
        }
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.httpVersion = .automatic
        configuration.timeout = .init(connect: connectTimeout, read: timeout)
        let created = (0..<connections).map { _ in Connection(HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)) }
        let (pool, spare) = clients.withLock { clients -> ([Connection], [Connection]) in
            if let existing = clients[key] { return (existing, created) }
            clients[key] = created
            return (created, [])
        }
        if !spare.isEmpty { Task { for connection in spare { try? await connection.client.shutdown() } } }
        return pool
    }

    /// A date as `apns-expiration`'s whole Unix seconds; a date an earlier version stored beyond
    /// what 64 bits hold is sent as the largest there is, never trapped on.
    static func unixSeconds(_ date: Date) -> Int64 {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        guard seconds.isFinite else { return 0 }
        return seconds >= 9.2e18 ? Int64.max : max(0, Int64(seconds))
    }

    /// Why a request got no answer, as the state machine tells failures apart.
    static func failure(_ error: any Error) -> TransportFailure {
        if let error = error as? HTTPClientError {
            switch error {
            // A server that takes the connection and then says nothing has timed out, in the
            // handshake or after it.
            case .readTimeout, .writeTimeout, .deadlineExceeded, .tlsHandshakeTimeout: return TransportFailure(.timedOut, "\(error)")
            case .connectTimeout, .getConnectionFromPoolTimeout: return TransportFailure(.connect, "\(error)")
            case .remoteConnectionClosed, .uncleanShutdown, .cancelled: return TransportFailure(.connectionLost, "\(error)")
            default: return TransportFailure(.other, "\(error)")
            }
        }
        // A peer that closes the connection without TLS's close_notify cut it, as a reset does:
        // the request is sent again, not taken for a TLS failure of the credential's authority.
        if let error = error as? NIOSSLError, case .uncleanShutdown = error {
            return TransportFailure(.connectionLost, "the connection was closed under the request (\(error))")
        }
        if error is NIOSSLError || error is BoringSSLError { return TransportFailure(.tls, String(describing: error)) }
        if error is NIOConnectionError { return TransportFailure(.connect, String(describing: error)) }
        if let error = error as? IOError, [ECONNREFUSED, EHOSTUNREACH, ENETUNREACH].contains(error.errnoCode) {
            return TransportFailure(.connect, String(describing: error))
        }
        if let error = error as? ChannelError, [.ioOnClosedChannel, .eof, .alreadyClosed].contains(error) {
            return TransportFailure(.connectionLost, String(describing: error))
        }
        if error is NIOHTTP2Errors.StreamClosed || error is IOError { return TransportFailure(.connectionLost, String(describing: error)) }
        return TransportFailure(.other, String(describing: error))
    }

    /// Runs until shutdown, then closes every connection.
    public func run() async throws {
        try? await gracefulShutdown()
        await shutdown()
    }

    /// Closes every connection.
    public func shutdown() async {
        for connection in clients.withLock({ clients in defer { clients = [:] }; return clients.values.flatMap { $0 } }) {
            try? await connection.client.shutdown()
        }
    }
}

/// Where a credential's requests go and whom they trust, read from the credential by the rules
/// its registration was checked with (`PushServerAddress`): a stored value that breaks them is an
/// error here, never a value handed to the HTTP client.
struct Route {
    /// `https://host[:port]` for pushes and broadcasts.
    var pushServer: String
    /// `https://host[:port]` for channel management: the push host when `url` is set.
    var channelManagementServer: String
    /// The credential's authority, as registered: the key of the client that trusts it.
    var caCertificate: String?

    /// FCM's route: its host (or the credential's `url`), trusting the credential's authority.
    init(server: String, caCertificate: String?) {
        (pushServer, channelManagementServer) = (server, server)
        self.caCertificate = caCertificate
    }

    init(_ credential: DeliveryCredential) throws(IsletError) {
        if let url = credential.url {
            let address = try PushServerAddress(url).description
            (pushServer, channelManagementServer) = (address, address)
        } else {
            (pushServer, channelManagementServer) = ("https://\(credential.environment.host)", credential.environment.channelManagement)
        }
        caCertificate = credential.caCertificate
    }

    /// The certificates in `caCertificate`, as the TLS library reads them; `nil` to trust the
    /// system's authorities. Read when a connection is made, not for every request.
    func authorities() throws(IsletError) -> [NIOSSLCertificate]? {
        guard let pem = caCertificate else { return nil }
        let certificates = try? NIOSSLCertificate.fromPEMBytes(Array(pem.utf8))
        guard let certificates, !certificates.isEmpty else {
            throw IsletError(
                .invalidRequest,
                "caCertificate must be the PEM text (BEGIN CERTIFICATE) of the authority to trust for url; this one cannot be read as a certificate."
            )
        }
        return certificates
    }
}

/// Provider tokens by credential: signed once, reused, signed again when old enough
/// (`ReusedProviderToken`).
final class ProviderTokens: Sendable {
    private let tokens = Mutex<[String: ReusedProviderToken]>([:])

    /// The credential's current token; a new one when the current is old enough, or when it is
    /// `refused` (Apple refused it).
    func token(for stored: StoredCredential, replacing refused: String?) async throws -> String {
        let credential = stored.credential
        let key = "\(credential.teamId) \(credential.keyId) \(stored.privateKey.hashValue)"
        let reused: ReusedProviderToken
        if let known = tokens.withLock({ $0[key] }) {
            reused = known
        } else {
            let signer = try await ProviderTokenSigner(p8: stored.privateKey, keyId: credential.keyId, teamId: credential.teamId)
            reused = tokens.withLock { tokens in
                if let raced = tokens[key] { return raced }
                tokens[key] = ReusedProviderToken(signer)
                return tokens[key]!
            }
        }
        return try await reused.token(replacing: refused)
    }
}
