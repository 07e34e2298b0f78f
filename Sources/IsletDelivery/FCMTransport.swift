import AsyncHTTPClient
import Foundation
import IsletCore
import IsletEngine
import IsletFCM
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import Synchronization

// Sends the engine's deliveries to Android phones through FCM HTTP v1 (docs/android.md), over
// the same clients as APNs's requests: one per host and trusted authority, HTTP/2 when the
// server offers it.

extension PushServiceTransport {
    /// FCM's own host.
    static let fcmServer = "https://fcm.googleapis.com"

    /// Sends one message: with the service account's current access token, fetched anew once
    /// when FCM answers `401`.
    public func send(_ request: FCMRequest) async -> TransportAnswer {
        let started = ContinuousClock.now
        var (answer, token) = await attemptFCM(request, replacing: nil)
        var renewed = false
        if case .refused(let refusal) = answer, refusal.status == 401 {
            (answer, _) = await attemptFCM(request, replacing: token)
            renewed = true
        }
        return TransportAnswer(fcm: answer, latency: ContinuousClock.now - started, accessTokenRenewed: renewed)
    }

    private func attemptFCM(_ request: FCMRequest, replacing refused: String?) async -> (FCMAnswer, String?) {
        let account: ServiceAccount
        let server: String
        let client: HTTPClient
        let token: String
        do {
            account = try serviceAccounts.account(request.credential.serviceAccount)
            server = try request.credential.credential.url.map { try PushServerAddress($0).description } ?? Self.fcmServer
            let route = Route(server: server, caCertificate: request.credential.credential.caCertificate)
            client = try self.client(for: route)
            let tokenRoute = Route(server: try TokenAddress(account.tokenUri).origin.description, caCertificate: route.caCertificate)
            token = try await accessTokens.token(for: account, client: try self.client(for: tokenRoute), replacing: refused)
        } catch let failure as AccessTokenFailure {
            return (.failed(failure.failure), nil)
        } catch {
            let why = (error as? IsletError)?.message ?? "\(error)"
            return (.failed(TransportFailure(.unusableCredential, why)), nil)
        }
        var http = HTTPClientRequest(url: server + "/v1/projects/\(account.projectId)/messages:send")
        http.method = .POST
        http.headers.add(name: "authorization", value: "Bearer \(token)")
        http.headers.add(name: "content-type", value: "application/json; charset=UTF-8")
        let message = AndroidPayloads.message(to: request.address, islet: request.islet, activityId: request.activityId, ttl: request.ttl)
        http.body = .bytes(ByteBuffer(data: (try? JSONEncoder().encode(message)) ?? Data()))
        do {
            let response = try await client.execute(http, timeout: timeout)
            let data = Data(buffer: try await response.body.collect(upTo: 64 << 10))
            return (FCMAnswer(status: Int(response.status.code), body: data, retryAfter: response.headers.first(name: "retry-after")), token)
        } catch {
            return (.failed(Self.failure(error)), token)
        }
    }

    /// Checks that an FCM credential can be sent with: its service account, its `url`, and the
    /// authority it trusts, as the requests will read them.
    public func check(_ credential: StoredFCMCredential) async throws(IsletError) {
        let account = try ServiceAccount.read(Data(credential.serviceAccount.utf8))
        _ = try await ServiceAccountSigner(account)
        if let url = credential.credential.url { _ = try PushServerAddress(url) }
        _ = try Route(server: Self.fcmServer, caCertificate: credential.credential.caCertificate).authorities()
    }
}

/// Service accounts as read from their stored JSON, once each: reading one checks its RSA key,
/// too much to do for every message.
final class ServiceAccounts: Sendable {
    private let read = Mutex<[String: ServiceAccount]>([:])

    func account(_ json: String) throws(IsletError) -> ServiceAccount {
        if let known = read.withLock({ $0[json] }) { return known }
        let account = try ServiceAccount.read(Data(json.utf8))
        read.withLock { read in
            if read.count >= 1_024 { read = [:] }
            read[json] = account
        }
        return account
    }
}

/// Why an access token could not be had, as the delivery's state machine reads it.
struct AccessTokenFailure: Error {
    var failure: TransportFailure
}

/// Access tokens by service account: fetched once, reused until five minutes before they
/// expire, fetched anew when FCM refused one. Requests that need a token together wait for the
/// same exchange, which takes at most the delivery's own request timeout, and ends when a
/// request waiting for it is cancelled (the sender stops): a token endpoint that never answers
/// holds neither a delivery nor a shutdown longer than an APNs request would.
final class AccessTokens: Sendable {
    private struct Held: Sendable {
        var token: String
        var expires: Date
    }
    private let tokens = Mutex<[String: Task<Held, any Error>]>([:])
    /// How long one exchange may take, from sending to the whole answer.
    private let timeout: TimeAmount
    /// How long before its expiry a token is replaced.
    static let margin: TimeInterval = 300

    init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    func token(for account: ServiceAccount, client: HTTPClient, replacing refused: String?) async throws -> String {
        let key = "\(account.clientEmail) \(account.privateKeyId) \(account.tokenUri) \(account.privateKey.hashValue)"
        let now = Date()
        let task = tokens.withLock { tokens -> Task<Held, any Error> in
            if let current = tokens[key] { return current }
            let task = Task { try await Self.fetch(account, client: client, timeout: timeout) }
            tokens[key] = task
            return task
        }
        do {
            let held = try await Self.value(of: task)
            if held.token != refused, held.expires.timeIntervalSince(now) > Self.margin { return held.token }
        } catch {
            // A failed exchange is not kept: the next request tries again.
            tokens.withLock { if $0[key] == task { $0[key] = nil } }
            throw error
        }
        let fresh = tokens.withLock { tokens -> Task<Held, any Error> in
            if let current = tokens[key], current != task { return current }
            let fresh = Task { try await Self.fetch(account, client: client, timeout: timeout) }
            tokens[key] = fresh
            return fresh
        }
        do {
            return try await Self.value(of: fresh).token
        } catch {
            tokens.withLock { if $0[key] == fresh { $0[key] = nil } }
            throw error
        }
    }

    /// The exchange's answer; a waiter that is cancelled cancels the exchange too (the next
    /// request starts another: a failed exchange is not kept).
    private static func value(of exchange: Task<Held, any Error>) async throws -> Held {
        try await withTaskCancellationHandler {
            try await exchange.value
        } onCancel: {
            exchange.cancel()
        }
    }

    /// The JWT-bearer grant at the account's `token_uri`.
    private static func fetch(_ account: ServiceAccount, client: HTTPClient, timeout: TimeAmount) async throws -> Held {
        let address = try TokenAddress(account.tokenUri)
        let assertion: String
        do {
            assertion = try await ServiceAccountSigner(account).assertion(issuedAt: Date())
        } catch {
            throw AccessTokenFailure(failure: TransportFailure(.unusableCredential, "its key cannot sign an assertion (\(error))"))
        }
        var request = HTTPClientRequest(url: address.description)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/x-www-form-urlencoded")
        request.body = .bytes(ByteBuffer(string: TokenRequest(assertion: assertion).body))
        let response: HTTPClientResponse
        let data: Data
        do {
            response = try await client.execute(request, timeout: timeout)
            data = Data(buffer: try await response.body.collect(upTo: 64 << 10))
        } catch {
            throw AccessTokenFailure(failure: PushServiceTransport.failure(error))
        }
        struct Grant: Decodable {
            var access_token: String?
            var expires_in: Double?
            var error: String?
            var error_description: String?
        }
        let grant = try? JSONDecoder().decode(Grant.self, from: data)
        let status = Int(response.status.code)
        if (500...599).contains(status) {
            throw AccessTokenFailure(failure: TransportFailure(.other, "\(address) answered \(status) to the token request"))
        }
        guard status == 200, let token = grant?.access_token, !token.isEmpty else {
            let why = [grant?.error, grant?.error_description].compactMap { $0 }.joined(separator: ": ")
            throw AccessTokenFailure(failure: TransportFailure(
                .unusableCredential, "\(address) refused the service account's assertion (\(status)\(why.isEmpty ? "" : ", \(why)"))"
            ))
        }
        let lifetime = min(max(grant?.expires_in ?? 3600, 0), 86_400)
        return Held(token: token, expires: Date().addingTimeInterval(lifetime))
    }
}
