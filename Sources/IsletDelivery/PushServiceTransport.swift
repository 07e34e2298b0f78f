import AsyncHTTPClient
import Foundation
import IsletAPNs
import IsletCore
import IsletEngine
import Logging
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import ServiceLifecycle
import Synchronization

/// Sends the engine's deliveries to the push services — Apple's APNs (or any APNs-compatible
/// host) and Google's FCM (`FCMTransport.swift`) — over HTTP/2, with provider tokens and access
/// tokens fetched once and reused. The `islet` command hands it to the server
/// (`PushServiceTransport.open`), as it does the store: the server never names it.
///
/// APNs requests go over `connections` HTTP/2 connections per host and trusted authority
/// (`PushConnection`, on swift-nio-http2), each batch on the one with the fewest in flight, so
/// the work spreads over the event loops. A sender's batch (`send(_:answered:)`) crosses to a
/// connection's event loop once, is written there in one pass and one flush, and its answers
/// come back from that loop: no task per request. A request whose connection is lost under it
/// (a `GOAWAY`, a reset) is sent once more at once, on another: a delivery is one request in
/// flight for its activity, so its order holds. FCM's requests and its access tokens go through
/// async-http-client.
///
/// A provider token is signed again after `ReusedProviderToken.refreshAge` (50 minutes: Apple wants
/// between 20 and 60), never sooner — Apple answers `TooManyProviderTokenUpdates` to a provider
/// that changes its token too often — except once, when Apple refuses the token: then it is
/// signed again and the request sent once more.
public final class PushServiceTransport: DeliveryTransport, Service {
    private let clients = Mutex<[ClientKey: HTTPClient]>([:])
    private let pools = Mutex<[PoolKey: [PushConnection]]>([:])
    private let tokens = ProviderTokens()
    let accessTokens: AccessTokens
    let serviceAccounts = ServiceAccounts()
    let timeout: TimeAmount
    /// How long opening a connection may take (TCP; its TLS handshake is the request's).
    private let connectTimeout: TimeAmount
    private let connections: Int
    /// Streams a connection opens before it is replaced (`PushConnection`; tests lower it).
    private let streamsPerConnection: Int
    private let logger: Logger

    private struct ClientKey: Hashable {
        var caCertificate: String?
    }

    /// A push server and the authority it is trusted by.
    private struct PoolKey: Hashable {
        var server: String
        var caCertificate: String?
    }

    /// - Parameters:
    ///   - timeout: How long one request may take, from sending to the whole answer.
    ///   - connectTimeout: How long opening a connection may take.
    ///   - connections: HTTP/2 connections per host and trusted authority (`delivery.connections`).
    public convenience init(timeout: TimeAmount = .seconds(30), connectTimeout: TimeAmount = .seconds(10), connections: Int = 1, logger: Logger) {
        self.init(timeout: timeout, connectTimeout: connectTimeout, connections: connections, streamsPerConnection: 1 << 29, logger: logger)
    }

    init(timeout: TimeAmount, connectTimeout: TimeAmount, connections: Int, streamsPerConnection: Int, logger: Logger) {
        self.streamsPerConnection = streamsPerConnection
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
        return await settle(request, after: await attempt(request, replacing: nil), started: started)
    }

    /// A sender's batch: each APNs request whose provider token is signed already is written at
    /// once on its connection, with the others of its connection; the rest (a token to sign, an
    /// answer that calls for another attempt, FCM's) go on as `send` does, a task each.
    public func send(_ requests: [Outbound], answered: @escaping @Sendable (Int, TransportAnswer) -> Void) {
        let started = ContinuousClock.now
        var batches: [ObjectIdentifier: (connection: PushConnection, items: [(index: Int, request: OutboundRequest, jwt: String)])] = [:]
        for (index, outbound) in requests.enumerated() {
            guard case .apns(let request) = outbound, let jwt = tokens.signedToken(for: request.credential),
                let route = try? Route(request.credential.credential), let connection = try? connection(to: route.server(for: request.target), route: route)
            else {
                Task { answered(index, await send(outbound)) }
                continue
            }
            batches[ObjectIdentifier(connection), default: (connection, [])].items.append((index, request, jwt))
        }
        for (connection, items) in batches.values {
            let futures = connection.send(items.map { Self.exchange($0.request, jwt: $0.jwt) }, timeout: timeout)
            for (item, future) in zip(items, futures) {
                future.whenComplete { result in
                    let answer = Self.answer(result)
                    guard !Self.callsForAnotherAttempt(answer) else {
                        Task { answered(item.index, await self.settle(item.request, after: (answer, item.jwt, connection), started: started)) }
                        return
                    }
                    var done = answer
                    done.latency = ContinuousClock.now - started
                    answered(item.index, done)
                }
            }
        }
    }

    /// Whether an answer is sent again: its connection was lost under it, or Apple refused the
    /// provider token.
    private static func callsForAnotherAttempt(_ answer: TransportAnswer) -> Bool {
        answer.failure?.kind == .connectionLost || refusesProviderToken(answer)
    }

    /// Whether Apple refused the provider token the request carried (expired or invalid).
    private static func refusesProviderToken(_ answer: TransportAnswer) -> Bool {
        guard case .refused(let refusal) = answer.answer else { return false }
        return [.expiredProviderToken, .invalidProviderToken].contains(refusal.reason)
    }

    /// What follows a first attempt: once more on another connection if it was lost; once more
    /// with a new provider token if Apple refused the one it carried.
    private func settle(
        _ request: OutboundRequest, after first: (TransportAnswer, String?, PushConnection?), started: ContinuousClock.Instant
    ) async -> TransportAnswer {
        var (answer, jwt, used) = first
        if answer.failure?.kind == .connectionLost {
            // Lost under the request: once more, at once, on another connection.
            (answer, jwt, used) = await attempt(request, replacing: nil, avoiding: used)
        }
        if Self.refusesProviderToken(answer) {
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
        _ request: OutboundRequest, replacing refused: String?, avoiding: PushConnection? = nil
    ) async -> (TransportAnswer, String?, PushConnection?) {
        let jwt: String
        let connection: PushConnection
        do {
            let route = try Route(request.credential.credential)
            jwt = try await tokens.token(for: request.credential, replacing: refused)
            connection = try self.connection(to: route.server(for: request.target), route: route, avoiding: avoiding)
        } catch {
            // Nothing was sent, and nothing can be until the credential is registered again.
            let why = (error as? IsletError)?.message ?? "its key cannot sign a provider token (\(error))"
            return (TransportAnswer(.failed(TransportFailure(.unusableCredential, why)), latency: .zero), nil, nil)
        }
        let answer: Result<PushExchangeResponse, any Error>
        do {
            answer = .success(try await connection.send([Self.exchange(request, jwt: jwt)], timeout: timeout)[0].get())
        } catch {
            answer = .failure(error)
        }
        return (Self.answer(answer), jwt, connection)
    }

    /// Checks that a credential can be sent with (`DeliveryCredentialCheck`), and that the TLS
    /// library takes its authority as the check did.
    public func check(_ credential: StoredCredential) async throws(IsletError) {
        try await DeliveryCredentialCheck.check(credential.credential, privateKey: credential.privateKey)
        _ = try Route(credential.credential).authorities()
    }

    /// The request's stream: APNs's path and headers for its target.
    private static func exchange(_ request: OutboundRequest, jwt: String) -> PushExchangeRequest {
        var headers = HPACKHeaders()
        let path: String
        var method = "POST"
        switch request.target {
        case .device(let token):
            path = "/3/device/" + token
            headers.add(name: "apns-topic", value: request.bundleId + ".push-type.liveactivity")
            headers.add(name: "apns-id", value: request.apnsId)
            if let collapseId = request.collapseId { headers.add(name: "apns-collapse-id", value: collapseId) }
        case .channel(let channelId):
            path = "/4/broadcasts/apps/" + request.bundleId
            headers.add(name: "apns-channel-id", value: channelId)
            headers.add(name: "apns-request-id", value: request.apnsId)
        case .createChannel, .deleteChannel:
            path = "/1/apps/" + request.bundleId + "/channels"
            headers.add(name: "apns-request-id", value: request.apnsId)
        }
        headers.add(name: "authorization", value: "bearer " + jwt, indexing: .neverIndexed)
        switch request.target {
        case .device, .channel:
            headers.add(name: "apns-push-type", value: "liveactivity")
            headers.add(name: "apns-priority", value: String(request.priority))
            headers.add(name: "apns-expiration", value: String(Self.unixSeconds(request.expiration ?? Date())))
        case .createChannel:
            break
        case .deleteChannel(let channelId):
            method = "DELETE"
            headers.add(name: "apns-channel-id", value: channelId)
        }
        var body: ByteBuffer?
        if !request.payload.isEmpty {
            headers.add(name: "content-type", value: "application/json")
            body = ByteBuffer(string: request.payload)
        }
        return PushExchangeRequest(method: method, path: path, headers: headers, body: body)
    }

    /// What the server answered, as the state machine reads it, or why nothing came.
    private static func answer(_ result: Result<PushExchangeResponse, any Error>) -> TransportAnswer {
        switch result {
        case .success(let response):
            struct Refusal: Decodable {
                var reason: String?
                var timestamp: Int64?
            }
            let refusal = response.body.readableBytes > 0 ? try? JSONDecoder().decode(Refusal.self, from: Data(buffer: response.body)) : nil
            return TransportAnswer(
                APNsAnswer(status: response.status, reason: refusal?.reason, timestamp: refusal?.timestamp),
                apnsId: response.headers.first(name: "apns-id") ?? response.headers.first(name: "apns-request-id"),
                channelId: response.headers.first(name: "apns-channel-id"), latency: .zero
            )
        case .failure(let error):
            return TransportAnswer(.failed(Self.failure(error)), latency: .zero)
        }
    }

    /// The client for a request to a host with its trusted authority (FCM's requests and its
    /// access tokens: `FCMTransport.swift`); async-http-client pools its connections.
    func client(for route: Route) throws(IsletError) -> HTTPClient {
        let key = ClientKey(caCertificate: route.caCertificate)
        if let client = clients.withLock({ $0[key] }) { return client }
        var tls = TLSConfiguration.makeClientConfiguration()
        if let authorities = try route.authorities() {
            tls.trustRoots = .certificates(authorities)
        }
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.httpVersion = .automatic
        configuration.timeout = .init(connect: connectTimeout, read: timeout)
        let created = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let (client, spare) = clients.withLock { clients -> (HTTPClient, HTTPClient?) in
            if let existing = clients[key] { return (existing, created) }
            clients[key] = created
            return (created, nil)
        }
        if let spare { Task { try? await spare.shutdown() } }
        return client
    }

    /// The connection for a request to `server` (`https://host[:port]`) trusting the route's
    /// authority: of its `connections`, made on first use, the one with the fewest requests in
    /// flight but `avoiding`.
    private func connection(to server: String, route: Route, avoiding: PushConnection? = nil) throws(IsletError) -> PushConnection {
        let key = PoolKey(server: server, caCertificate: route.caCertificate)
        var pool = pools.withLock { $0[key] } ?? []
        if pool.isEmpty { pool = try makePool(key, route: route) }
        let candidates = pool.count > 1 ? pool.filter { $0 !== avoiding } : pool
        return candidates.min { $0.inFlight.load(ordering: .relaxed) < $1.inFlight.load(ordering: .relaxed) }!
    }

    /// Makes a pool's connections (none is opened until a request needs it), unless another
    /// request made them first.
    private func makePool(_ key: PoolKey, route: Route) throws(IsletError) -> [PushConnection] {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.applicationProtocols = ["h2"]
        if let authorities = try route.authorities() {
            tls.trustRoots = .certificates(authorities)
        }
        let context: NIOSSLContext
        do {
            context = try NIOSSLContext(configuration: tls)
        } catch {
            throw IsletError(.invalidRequest, "the TLS library cannot use this credential's authority (\(error))")
        }
        let address = try PushServerAddress(key.server)
        let host = address.host.hasPrefix("[") ? String(address.host.dropFirst().dropLast()) : address.host
        let authority = address.port.map { "\(address.host):\($0)" } ?? address.host
        let loops = MultiThreadedEventLoopGroup.singleton
        let created = (0..<connections).map { _ in
            PushConnection(
                host: host, port: address.port ?? 443, authority: authority, tls: context, connectTimeout: connectTimeout,
                requestTimeout: timeout, streamsPerConnection: streamsPerConnection, on: loops.next()
            )
        }
        return pools.withLock { pools in
            if let existing = pools[key] { return existing }
            pools[key] = created
            return created
        }
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
        if let error = error as? PushConnectionError {
            switch error {
            case .timedOut: return TransportFailure(.timedOut, error.description)
            case .connectionLost: return TransportFailure(.connectionLost, error.description)
            case .badAnswer: return TransportFailure(.other, error.description)
            }
        }
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

    /// The connections made so far, over every host (for tests).
    func connectionsMade() -> Int {
        pools.withLock { $0.values.flatMap { $0 } }.reduce(0) { $0 + $1.connectionsMade.load(ordering: .relaxed) }
    }

    /// The APNs connections open now, over every host (for tests).
    func openConnections() async -> Int {
        var open = 0
        for connection in pools.withLock({ $0.values.flatMap { $0 } }) where await connection.isOpen() { open += 1 }
        return open
    }

    /// How long closing every connection may take at shutdown. async-http-client waits without a
    /// bound for an HTTP/2 server's first `SETTINGS` (an FCM host that takes the connection and
    /// never speaks), and its shutdown with it: what has not closed by then is left to the
    /// process's exit, and a line says so.
    static let closeTimeout: Duration = .seconds(2)

    /// Closes every connection, waiting at most `closeTimeout` for them.
    public func shutdown() async {
        let connections = pools.withLock { pools in defer { pools = [:] }; return pools.values.flatMap { $0 } }
        let clients = clients.withLock { clients in defer { clients = [:] }; return Array(clients.values) }
        let closes = connections.map { connection -> @Sendable () async -> Void in { await connection.shutdown() } }
            + clients.map { client -> @Sendable () async -> Void in { try? await client.shutdown() } }
        let left = await closeAll(within: Self.closeTimeout, closes)
        guard left > 0 else { return }
        logger.notice(
            "Shutdown: \(left) push connection\(left == 1 ? "" : "s") did not close within \(Self.closeTimeout); left to the process's exit",
            metadata: ["hint": "a push server that took the connection and never answered (docs/security.md, \"Shutting down\")"]
        )
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

    /// The server a request to `target` goes to.
    func server(for target: OutboundRequest.Target) -> String {
        switch target {
        case .device, .channel: pushServer
        case .createChannel, .deleteChannel: channelManagementServer
        }
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
        let key = Self.key(stored)
        let reused: ReusedProviderToken
        if let known = tokens.withLock({ $0[key] }) {
            reused = known
        } else {
            let signer = try await ProviderTokenSigner(p8: stored.privateKey, keyId: stored.credential.keyId, teamId: stored.credential.teamId)
            reused = tokens.withLock { tokens in
                if let raced = tokens[key] { return raced }
                tokens[key] = ReusedProviderToken(signer)
                return tokens[key]!
            }
        }
        return try await reused.token(replacing: refused)
    }

    /// The credential's current token if one is signed and current, without waiting.
    func signedToken(for stored: StoredCredential) -> String? {
        tokens.withLock { $0[Self.key(stored)] }?.signedToken()
    }

    /// A credential's tokens are its team's, its key id's and its key's.
    private static func key(_ stored: StoredCredential) -> String {
        "\(stored.credential.teamId) \(stored.credential.keyId) \(stored.privateKey.hashValue)"
    }
}
