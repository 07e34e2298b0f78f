import Foundation
import HTTPTypes
import Hummingbird
import IsletAPNs
import IsletCore
import IsletEngine
import NIOCore
import NIOHTTP2

/// The APNs-compatible endpoint's routes, taking the very requests Apple's servers take:
///
/// - `POST /3/device/{token}` — a push to an activity's token or a device's push-to-start token;
/// - `POST /4/broadcasts/apps/{bundleId}` — a broadcast to a channel (iOS 18);
/// - `POST|GET|DELETE /1/apps/{bundleId}/channels`, `GET /1/apps/{bundleId}/all-channels` —
///   channel management (Apple serves these on other hosts; Islet on the same port).
///
/// Refusals are Apple's statuses and reasons. A push APNs accepts answers 200 even when the
/// device then drops it, as Apple does — the activity's history says why — unless the app asked
/// for strict pushes, in which case the drop is a `400` with the drop's reason.
struct APNsRoutes {
    let engine: Engine
    let verifier: ProviderTokenVerifier
    let settings: APNsSettings
    let tokenRate: TokenRateLimit
    let tokenUpdates: ProviderTokenUpdates

    init(engine: Engine, verifier: ProviderTokenVerifier, settings: APNsSettings) {
        self.engine = engine
        self.verifier = verifier
        self.settings = settings
        tokenRate = TokenRateLimit(perMinute: settings.tokenRateLimit)
        tokenUpdates = ProviderTokenUpdates(interval: settings.providerTokenInterval)
    }

    /// Apple's payload limits.
    static let maxDevicePayload = 4096
    static let maxBroadcastPayload = 5120

    /// Adds the routes to `router`, and `405` answers for the other methods on their paths.
    ///
    /// - Returns: The routes it answers (`POST /3/device/{token}`…), not the `405`s: what
    ///   docs/security.md's table of the APNs port lists, and a test holds it to.
    func add(to router: Router<APNsRequestContext>) -> [String] {
        router.post("3/device/:token", use: device)
        router.post("3/device") { request, _ -> Response in
            throw APNsError.missingDeviceToken("The path needs the device token: /3/device/<token>.")
        }
        router.post("4/broadcasts/apps/:bundleId", use: broadcast)
        router.post("1/apps/:bundleId/channels", use: createChannel)
        router.get("1/apps/:bundleId/channels", use: readChannel)
        router.delete("1/apps/:bundleId/channels", use: deleteChannel)
        router.get("1/apps/:bundleId/all-channels", use: listChannels)
        let answered = Set(router.routes.map(\.description)).sorted()
        let allowed: [(RouterPath, [HTTPRequest.Method])] = [
            ("3/device/:token", [.post]), ("4/broadcasts/apps/:bundleId", [.post]),
            ("1/apps/:bundleId/channels", [.post, .get, .delete]), ("1/apps/:bundleId/all-channels", [.get]),
        ]
        for (path, methods) in allowed {
            for method in [HTTPRequest.Method.get, .post, .put, .delete, .patch, .head] where !methods.contains(method) {
                router.on(path, method: method) { request, _ -> Response in
                    throw APNsError.methodNotAllowed(
                        "\(request.method) is not allowed on \(request.uri.path); use \(methods.map(\.rawValue).joined(separator: ", "))."
                    )
                }
            }
        }
        return answered
    }

    // MARK: Device pushes

    @Sendable func device(_ request: Request, context: APNsRequestContext) async throws -> Response {
        let headers = try PushHeaders.device(request.headers)
        let identity = try await verify(request, context: context)
        let token = try context.parameters.require("token")
        let bundleId = try check(headers, identity: identity, token: token)
        let body = try await Self.payload(of: request, limit: Self.maxDevicePayload)
        let result: PushResult
        do {
            result = try await engine.deliver(Self.devicePush(headers, bundleId: bundleId, token: token, body: body))
        } catch let refusal as PushRefusal {
            throw APNsError(refusal)
        }
        context.trace.pushed(result)
        return Response(status: .ok, headers: try Self.accepted(headers, result))
    }

    /// A device push's checks after its headers' and its provider token's, in Apple's order: the
    /// topic is the token's, the device token is shaped as one, and it is not pushed to too often.
    /// - Returns: The app the push is for.
    func check(_ headers: PushHeaders, identity: ProviderIdentity, token: String) throws -> BundleID {
        let bundleId = headers.topicBundleId!
        guard identity.bundleIds.contains(bundleId) else {
            throw APNsError.topicDisallowed("Key \(identity.keyId) of team \(identity.teamId) is not registered for \(bundleId).")
        }
        guard Self.isTokenShaped(token) else {
            throw APNsError.badDeviceToken(
                "A device token is hexadecimal, 64 characters today (up to 200); \"\(token.prefix(80))\" is not one."
            )
        }
        try tokenRate.take(token, now: engine.clock.now())
        return bundleId
    }

    /// The push the engine delivers. Its payload is parsed before the token is looked up, but a
    /// refusal is answered only if the token passes: Apple checks the token first.
    static func devicePush(_ headers: PushHeaders, bundleId: BundleID, token: String, body: Data) -> DevicePush {
        let payload = Result<LiveActivityPayload, any Error> { try LiveActivityPayload.parse(body) }
        return DevicePush(token: token, bundleId: bundleId, priority: headers.priority, payload: payload, collapseId: headers.collapseId)
    }

    // MARK: Broadcasts and channels

    @Sendable func broadcast(_ request: Request, context: APNsRequestContext) async throws -> Response {
        let headers = try PushHeaders.broadcast(request.headers)
        let bundleId = try await authorizedApp(request, context: context)
        // Read and parsed first, answered only once the channel and the expiration pass.
        let change = await Result.catching { () async throws -> Activity.PushedChange in
            let body = try await Self.payload(of: request, limit: Self.maxBroadcastPayload)
            switch try LiveActivityPayload.parse(body).action {
            case .update(let update): return .update(update)
            case .end(let end): return .end(end)
            case .start: throw APNsError.badRequestPayload("Broadcasts carry update and end events only; they cannot start activities.")
            case .undeliverable(_, let detail): throw APNsError.badRequestPayload(detail)
            }
        }
        do {
            context.trace.broadcast(try await engine.broadcast(BroadcastPush(
                channelId: headers.channelId!, bundleId: bundleId, expiration: headers.expiration ?? 0, change: change
            )))
        } catch let refusal as PushRefusal {
            throw APNsError(refusal)
        }
        var fields: HTTPFields = [HTTPField.Name("apns-unique-id")!: UUID().uuidString.lowercased()]
        fields[HTTPField.Name("apns-request-id")!] = headers.requestId
        return Response(status: .ok, headers: fields)
    }

    @Sendable func createChannel(_ request: Request, context: APNsRequestContext) async throws -> Response {
        let requestId = try PushHeaders.requestId(in: request.headers, name: "apns-request-id")
        let bundleId = try await authorizedApp(request, context: context)
        guard let body = ChannelConfiguration(body: try await Self.payload(of: request, limit: 4096)) else {
            throw APNsError.badRequestParams(ChannelConfiguration.expected)
        }
        let channel: BroadcastChannel
        do {
            channel = try await engine.createChannel(bundleId: bundleId, storagePolicy: body.messageStoragePolicy, limit: settings.maxChannelsPerApp)
        } catch let error as IsletError where error.reason == .invalidRequest {
            throw APNsError.cannotCreateChannelConfig(error.message)
        }
        return Response(status: .created, headers: [
            HTTPField.Name("apns-request-id")!: requestId, HTTPField.Name("apns-channel-id")!: channel.id,
        ])
    }

    @Sendable func readChannel(_ request: Request, context: APNsRequestContext) async throws -> Response {
        let requestId = try PushHeaders.requestId(in: request.headers, name: "apns-request-id")
        let bundleId = try await authorizedApp(request, context: context)
        let id = try PushHeaders.channelId(in: request.headers)
        guard let channel = try await engine.channel(id, bundleId: bundleId) else {
            throw APNsError.channelNotRegistered("No channel \(id) for \(bundleId).")
        }
        let body = ChannelConfiguration(messageStoragePolicy: channel.storagePolicy).body
        return Response(
            status: .ok,
            headers: [.contentType: "application/json", HTTPField.Name("apns-request-id")!: requestId],
            body: ResponseBody(byteBuffer: ByteBuffer(string: body))
        )
    }

    @Sendable func deleteChannel(_ request: Request, context: APNsRequestContext) async throws -> Response {
        let requestId = try PushHeaders.requestId(in: request.headers, name: "apns-request-id")
        let bundleId = try await authorizedApp(request, context: context)
        let id = try PushHeaders.channelId(in: request.headers)
        guard try await engine.deleteChannel(id, bundleId: bundleId) else {
            throw APNsError.channelNotRegistered("No channel \(id) for \(bundleId).")
        }
        return Response(status: .noContent, headers: [HTTPField.Name("apns-request-id")!: requestId])
    }

    @Sendable func listChannels(_ request: Request, context: APNsRequestContext) async throws -> Response {
        let requestId = try PushHeaders.requestId(in: request.headers, name: "apns-request-id")
        let bundleId = try await authorizedApp(request, context: context)
        let ids = try await engine.channels(bundleId: bundleId).map(\.id)
        let body = try JSONEncoder().encode(["channels": ids])
        return Response(
            status: .ok,
            headers: [.contentType: "application/json", HTTPField.Name("apns-request-id")!: requestId],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: body))
        )
    }

    // MARK: Shared checks

    private func verify(_ request: Request, context: APNsRequestContext) async throws -> ProviderIdentity {
        let engine = self.engine
        let now = engine.clock.now()
        let identity = try await verifier.verify(authorization: request.headers[.authorization], now: now) { keyId in
            try await engine.providerKeys(keyId: keyId)
        }
        return try verified(identity, trace: context.trace, connection: context.connection, now: now)
    }

    /// `verify` for a provider token the verifier remembers, without a key's lookup; `nil` when
    /// it does not remember it (the route then verifies it, and it is remembered).
    func verifyRemembered(_ fields: HTTPFields, trace: APNsRequestTrace, connection: (any Channel)?) throws -> ProviderIdentity? {
        let now = engine.clock.now()
        guard let identity = try verifier.verifyRemembered(authorization: fields[.authorization], now: now) else { return nil }
        return try verified(identity, trace: trace, connection: connection, now: now)
    }

    /// A verified identity, once its connection may use it (a provider token is not replaced
    /// on one connection more often than Apple allows).
    private func verified(_ identity: ProviderIdentity, trace: APNsRequestTrace, connection: (any Channel)?, now: Date) throws -> ProviderIdentity {
        trace.verified(identity)
        try tokenUpdates.check(identity, on: connection, now: now)
        return identity
    }

    /// The app in the path, when the request's provider token may act for it.
    private func authorizedApp(_ request: Request, context: APNsRequestContext) async throws -> BundleID {
        let identity = try await verify(request, context: context)
        let bundleId = try context.parameters.require("bundleId")
        guard identity.bundleIds.contains(bundleId) else {
            throw APNsError.topicMismatch("Key \(identity.keyId) of team \(identity.teamId) is not registered for \(bundleId).")
        }
        return bundleId
    }

    private static func isTokenShaped(_ token: String) -> Bool {
        (64...200).contains(token.count) && token.count % 2 == 0 && token.allSatisfy(\.isHexDigit)
    }

    private static func payload(of request: Request, limit: Int) async throws -> Data {
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw payloadTooLarge(limit)
        } catch let error as NIOHTTP2Errors.StreamClosed {
            // The client reset the stream, or it outlived apns.requestTimeout: nobody hears
            // this answer, and it is the client's doing, not the server's failure.
            throw APNsError.badRequestPayload("The stream closed (\(error.errorCode)) before its payload arrived.")
        }
        return Data(buffer.readableBytesView)
    }

    /// A payload over `limit` bytes.
    static func payloadTooLarge(_ limit: Int) -> APNsError {
        APNsError.payloadTooLarge("The payload is over \(limit) bytes.")
    }

    /// The header fields of a push APNs takes (a 200), or — for an app with strict pushes — the
    /// device's drop, thrown as a 400.
    static func accepted(_ headers: PushHeaders, _ result: PushResult) throws -> HTTPFields {
        if result.strict, let ignored = result.ignored {
            throw APNsError.dropped(ignored.reason, ignored.detail)
        }
        return [HTTPField.Name("apns-id")!: headers.requestId, HTTPField.Name("apns-unique-id")!: UUID().uuidString.lowercased()]
    }

    /// Puts the request's id (or a new one) in a response, as `apns-id` or `apns-request-id`.
    static func echoRequestId(of request: Request, into headers: inout HTTPFields) {
        echoRequestId(path: request.uri.path, fields: request.headers, into: &headers)
    }

    /// `echoRequestId`, from the request's path and header fields.
    static func echoRequestId(path: String, fields: HTTPFields, into headers: inout HTTPFields) {
        let name = path.hasPrefix("/3/") ? "apns-id" : "apns-request-id"
        let field = HTTPField.Name(name)!
        let sent = fields[field].flatMap { UUID(uuidString: $0) == nil ? nil : $0 }
        headers[field] = sent ?? PushHeaders.newRequestId()
    }
}

extension APNsError {
    /// Apple's answer to a push the engine refused before any device saw it.
    init(_ refusal: PushRefusal) {
        switch refusal {
        case .unknownTopic(let bundleId):
            self = .topicDisallowed("No app \(bundleId) on this server.")
        case .unknownToken:
            self = .badDeviceToken("No activity and no device holds this token.")
        case .retired(let since, let rotated):
            let milliseconds = Int64(since.timeIntervalSince1970 * 1000)
            self =
                rotated
                ? .expiredToken(since: milliseconds, "The token was rotated; the activity or device has a new one.")
                : .unregistered(since: milliseconds, "The token's activity was dismissed.")
        case .tokenNotForTopic(let topic):
            self = .deviceTokenNotForTopic("The token belongs to another app than the topic's, \(topic).")
        case .channelNotRegistered(let channelId, let bundleId):
            self = .channelNotRegistered("No channel \(channelId) for \(bundleId).")
        case .expirationOnChannelWithoutStorage:
            self = .badExpirationDate("A channel that stores no message takes apns-expiration: 0.")
        }
    }
}

extension Result where Failure == any Error {
    /// The value `body` returns, or the error it throws.
    static func catching(_ body: () async throws -> Success) async -> Result {
        do {
            return .success(try await body())
        } catch {
            return .failure(error)
        }
    }
}
