import Foundation
import HTTPTypes
import Hummingbird
import IsletAPNs
import IsletCore
import IsletStore
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

    /// Apple's payload limits.
    static let maxDevicePayload = 4096
    static let maxBroadcastPayload = 5120

    func add(to router: Router<APNsRequestContext>) {
        router.post("3/device/:token", use: device)
        router.post("3/device") { request, _ -> Response in
            throw APNsError.missingDeviceToken("The path needs the device token: /3/device/<token>.")
        }
        router.post("4/broadcasts/apps/:bundleId", use: broadcast)
        router.post("1/apps/:bundleId/channels", use: createChannel)
        router.get("1/apps/:bundleId/channels", use: readChannel)
        router.delete("1/apps/:bundleId/channels", use: deleteChannel)
        router.get("1/apps/:bundleId/all-channels", use: listChannels)
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
    }

    // MARK: Device pushes

    @Sendable func device(_ request: Request, context: APNsRequestContext) async throws -> Response {
        let headers = try PushHeaders.device(request.headers)
        let identity = try await verify(request)
        let bundleId = headers.topicBundleId!
        guard identity.bundleIds.contains(bundleId) else {
            throw APNsError.topicDisallowed("Key \(identity.keyId) of team \(identity.teamId) is not registered for \(bundleId).")
        }
        let token = try context.parameters.require("token")
        guard Self.isTokenShaped(token) else {
            throw APNsError.badDeviceToken(
                "A device token is hexadecimal, 64 characters today (up to 200); \"\(token.prefix(80))\" is not one."
            )
        }
        let body = try await Self.payload(of: request, limit: Self.maxDevicePayload)
        let app = try await engine.store.app(bundleId)
        switch try await engine.store.lookup(token: token.lowercased()) {
        case .unknown:
            throw APNsError.badDeviceToken("No activity and no device holds this token.")
        case .retired(let at, let reason, let owner):
            try Self.check(owner, is: bundleId)
            let milliseconds = Int64(at.timeIntervalSince1970 * 1000)
            if reason == "rotated" {
                throw APNsError.expiredToken(since: milliseconds, "The token was rotated; the activity or device has a new one.")
            }
            throw APNsError.unregistered(since: milliseconds, "The token's activity was dismissed.")
        case .activity(let activityId, let owner):
            try Self.check(owner, is: bundleId)
            let activity = try await engine.store.activity(activityId, owner: nil)
            let payload = try LiveActivityPayload.parse(body, device: activity.deviceId)
            let ignored: (IgnoreReason, String)?
            switch payload.action {
            case .update(let update):
                let outcome = try await engine.push(.update(update), priority: headers.priority, to: activityId)
                ignored = outcome.transition.ignored.map { ($0, Self.detail(of: outcome.transition)) }
            case .end(let end):
                let outcome = try await engine.push(.end(end), priority: headers.priority, to: activityId)
                ignored = outcome.transition.ignored.map { ($0, Self.detail(of: outcome.transition)) }
            case .start:
                ignored = try await undeliverable(
                    .invalidPayload, "A start goes to a push-to-start token, not to an activity's token.",
                    payload: payload, activity: activity
                )
            case .undeliverable(let reason, let detail):
                ignored = try await undeliverable(reason, detail, payload: payload, activity: activity)
            }
            return try Self.accepted(headers, ignored: ignored, strict: app.strictPushes)
        case .pushToStart(let deviceId, let owner):
            try Self.check(owner, is: bundleId)
            let payload = try LiveActivityPayload.parse(body, device: deviceId)
            var ignored: (IgnoreReason, String)?
            switch payload.action {
            case .start(let start):
                // A start the device refuses is recorded on the device by the store.
                if case .ignored(let reason, let message) = try await engine.pushToStart(start, bundleId: bundleId) {
                    ignored = (reason, message)
                }
            case .update, .end:
                ignored = (.invalidPayload, "Updates and ends go to the activity's own token, not to a push-to-start token.")
            case .undeliverable(let reason, let detail):
                ignored = (reason, detail)
            }
            if let (reason, detail) = ignored, !payload.action.isStart {
                // No activity to record it on: the device's history has it.
                try await engine.recordUndeliverable(
                    IgnoredUpdate(
                        reason: reason, action: payload.actionName, content: nil, timestamp: payload.timestamp ?? engine.clock.now(),
                        lastUpdateTimestamp: nil, message: detail
                    ),
                    bundleId: bundleId, deviceId: deviceId, activityId: nil
                )
            }
            return try Self.accepted(headers, ignored: ignored, strict: app.strictPushes)
        }
    }

    /// Records a payload the activity's device could not use.
    private func undeliverable(
        _ reason: IgnoreReason, _ detail: String, payload: LiveActivityPayload, activity: Activity
    ) async throws -> (IgnoreReason, String) {
        try await engine.recordUndeliverable(
            IgnoredUpdate(
                reason: reason, action: payload.actionName, content: nil, timestamp: payload.timestamp ?? engine.clock.now(),
                lastUpdateTimestamp: activity.lastUpdateTimestamp, message: detail
            ),
            bundleId: activity.bundleId, deviceId: activity.deviceId, activityId: activity.id
        )
        return (reason, detail)
    }

    // MARK: Broadcasts and channels

    @Sendable func broadcast(_ request: Request, context: APNsRequestContext) async throws -> Response {
        let headers = try PushHeaders.broadcast(request.headers)
        let bundleId = try await authorizedApp(request, context: context)
        guard let channel = try await engine.store.channel(headers.channelId!, bundleId: bundleId) else {
            throw APNsError.channelNotRegistered("No channel \(headers.channelId!) for \(bundleId).")
        }
        if channel.storagePolicy == 0, headers.expiration != 0 {
            throw APNsError.badExpirationDate("A channel that stores no message takes apns-expiration: 0.")
        }
        let body = try await Self.payload(of: request, limit: Self.maxBroadcastPayload)
        let change: Activity.PushedChange
        switch try LiveActivityPayload.parse(body).action {
        case .update(let update): change = .update(update)
        case .end(let end): change = .end(end)
        case .start: throw APNsError.badRequestPayload("Broadcasts carry update and end events only; they cannot start activities.")
        case .undeliverable(_, let detail): throw APNsError.badRequestPayload(detail)
        }
        _ = try await engine.broadcast(change, channel: channel, expiration: headers.expiration ?? 0)
        var fields: HTTPFields = [HTTPField.Name("apns-unique-id")!: UUID().uuidString.lowercased()]
        fields[HTTPField.Name("apns-request-id")!] = headers.requestId
        return Response(status: .ok, headers: fields)
    }

    @Sendable func createChannel(_ request: Request, context: APNsRequestContext) async throws -> Response {
        let requestId = try PushHeaders.requestId(in: request.headers, name: "apns-request-id")
        let bundleId = try await authorizedApp(request, context: context)
        struct Body: Decodable {
            var policy: Int
            var pushType: String
            enum CodingKeys: String, CodingKey {
                case policy = "message-storage-policy", pushType = "push-type"
            }
        }
        let data = try await Self.payload(of: request, limit: 4096)
        guard let body = try? JSONDecoder().decode(Body.self, from: data), [0, 1].contains(body.policy),
            body.pushType.lowercased() == "liveactivity"
        else {
            throw APNsError.badRequestParams(#"The body must be {"message-storage-policy": 0 or 1, "push-type": "LiveActivity"}."#)
        }
        let channel: BroadcastChannel
        do {
            channel = try await engine.store.createChannel(
                bundleId: bundleId, storagePolicy: body.policy, limit: settings.maxChannelsPerApp, now: engine.clock.now()
            )
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
        guard let channel = try await engine.store.channel(id, bundleId: bundleId) else {
            throw APNsError.channelNotRegistered("No channel \(id) for \(bundleId).")
        }
        let body = #"{"message-storage-policy":\#(channel.storagePolicy),"push-type":"LiveActivity"}"#
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
        guard try await engine.store.deleteChannel(id, bundleId: bundleId) else {
            throw APNsError.channelNotRegistered("No channel \(id) for \(bundleId).")
        }
        return Response(status: .noContent, headers: [HTTPField.Name("apns-request-id")!: requestId])
    }

    @Sendable func listChannels(_ request: Request, context: APNsRequestContext) async throws -> Response {
        let requestId = try PushHeaders.requestId(in: request.headers, name: "apns-request-id")
        let bundleId = try await authorizedApp(request, context: context)
        let ids = try await engine.store.channels(bundleId: bundleId).map(\.id)
        let body = try JSONEncoder().encode(["channels": ids])
        return Response(
            status: .ok,
            headers: [.contentType: "application/json", HTTPField.Name("apns-request-id")!: requestId],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: body))
        )
    }

    // MARK: Shared checks

    private func verify(_ request: Request) async throws -> ProviderIdentity {
        let store = engine.store
        return try await verifier.verify(authorization: request.headers[.authorization], now: engine.clock.now()) { keyId in
            try await store.providerKeys(keyId: keyId)
        }
    }

    /// The app in the path, when the request's provider token may act for it.
    private func authorizedApp(_ request: Request, context: APNsRequestContext) async throws -> BundleID {
        let identity = try await verify(request)
        let bundleId = try context.parameters.require("bundleId")
        guard identity.bundleIds.contains(bundleId) else {
            throw APNsError(
                status: 403, reason: "TopicMismatch",
                detail: "Key \(identity.keyId) of team \(identity.teamId) is not registered for \(bundleId)."
            )
        }
        return bundleId
    }

    private static func check(_ owner: BundleID, is bundleId: BundleID) throws {
        guard owner == bundleId else {
            throw APNsError.deviceTokenNotForTopic("The token belongs to \(owner), not to the topic's app \(bundleId).")
        }
    }

    private static func isTokenShaped(_ token: String) -> Bool {
        (64...200).contains(token.count) && token.count % 2 == 0 && token.allSatisfy(\.isHexDigit)
    }

    private static func payload(of request: Request, limit: Int) async throws -> Data {
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw APNsError.payloadTooLarge("The payload is over \(limit) bytes.")
        } catch let error as NIOHTTP2Errors.StreamClosed {
            // The client reset the stream, or it outlived apns.requestTimeout: nobody hears
            // this answer, and it is the client's doing, not the server's failure.
            throw APNsError.badRequestPayload("The stream closed (\(error.errorCode)) before its payload arrived.")
        }
        return Data(buffer.readableBytesView)
    }

    private static func detail(of transition: Transition) -> String {
        for case .updateIgnored(let ignored) in transition.payloads.reversed() {
            return ignored.message
        }
        return ""
    }

    /// A push APNs takes: 200, or — for an app with strict pushes — the device's drop as a 400.
    private static func accepted(_ headers: PushHeaders, ignored: (IgnoreReason, String)?, strict: Bool) throws -> Response {
        if strict, let (reason, detail) = ignored {
            throw APNsError(status: 400, reason: reason.rawValue, detail: detail)
        }
        return Response(status: .ok, headers: [
            HTTPField.Name("apns-id")!: headers.requestId, HTTPField.Name("apns-unique-id")!: UUID().uuidString.lowercased(),
        ])
    }

    /// Puts the request's id (or a new one) in a response, as `apns-id` or `apns-request-id`.
    static func echoRequestId(of request: Request, into headers: inout HTTPFields) {
        let name = request.uri.path.hasPrefix("/3/") ? "apns-id" : "apns-request-id"
        let field = HTTPField.Name(name)!
        let sent = request.headers[field].flatMap { UUID(uuidString: $0) == nil ? nil : $0 }
        headers[field] = sent ?? PushHeaders.newRequestId()
    }
}

extension LiveActivityPayload.Action {
    var isStart: Bool {
        if case .start = self { return true }
        return false
    }
}
