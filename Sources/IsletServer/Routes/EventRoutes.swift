import Foundation
import HTTPTypes
import NIOWebSocket
import Hummingbird
import HummingbirdWebSocket
import IsletCore
import IsletEngine
import NIOCore
import ServiceLifecycle

/// `GET /v1/events` (Server-Sent Events) and `GET /v1/events/ws` (WebSocket): live events,
/// filterable by app, device and activity, resumable from an event id.
///
/// A WebSocket client that cannot be served (a wrong key, a bad parameter) is upgraded and then
/// closed with code 4000 + the HTTP status it would have had (4401, 4403, 4400) and the reason:
/// browsers see close codes, never a refused handshake's status.
struct EventRoutes {
    let engine: Engine
    let settings: StreamSettings
    /// Who a WebSocket upgrade speaks for, as the middleware decides it for every other request.
    let authentication: Authentication

    func add(to router: Router<IsletRequestContext>, webSocketRouter: Router<IsletRequestContext>) {
        router.get("v1/events", use: serverSentEvents)
        // Reached when a request to the WebSocket path was not upgraded: say why.
        router.get("v1/events/ws") { request, context -> Response in
            _ = try self.streamRequest(request, context: context)
            throw IsletError(.invalidRequest, "This is a WebSocket endpoint: connect with a WebSocket client (Upgrade: websocket).")
        }
        webSocketRouter.ws("v1/events/ws") { _, _ in
            .upgrade([:])
        } onUpgrade: { inbound, outbound, context in
            try await self.webSocket(inbound: inbound, outbound: outbound, context: context)
        }
    }

    /// Checks a stream's request and hands the stream to the connection's `EventStreamHandler`,
    /// which writes it: the response returned here is its head.
    @Sendable func serverSentEvents(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let stream = EventStream(engine: engine, settings: settings, request: try streamRequest(request, context: context))
        guard let handover = context.eventStreamHandover else {
            throw IsletError(.internalError, "The event stream is served by the connection's handler, which did not take this request.")
        }
        handover.hand(stream)
        return Response(status: .ok, headers: [
            .contentType: "text/event-stream; charset=utf-8", .cacheControl: "no-cache",
            HTTPField.Name("X-Accel-Buffering")!: "no",
        ])
    }

    func webSocket(
        inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter,
        context: WebSocketRouterContext<IsletRequestContext>
    ) async throws {
        let request: StreamRequest
        do {
            // The WebSocket router has no authentication middleware: the upgrade is answered
            // first, so a refusal can be a close code the browser sees.
            var requestContext = context.requestContext
            try await authentication.authenticate(context.request, &requestContext)
            request = try streamRequest(context.request, context: requestContext)
        } catch let error as IsletError {
            try await outbound.refuse(error)
            return
        }
        let stream = EventStream(engine: engine, settings: settings, request: request)
        let subscription = stream.subscribe()
        let stallGuard = StalledStreamGuard(
            channel: context.requestContext.channel,
            writeTimeout: .nanoseconds(Int64(settings.writeTimeout * 1_000_000_000))
        )
        stallGuard.watch(subscription)
        defer { stallGuard.streamEnded() }
        try await withGracefulShutdownHandler {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    let reason = try await stream.run(subscription) { events in
                        try await stallGuard.write {
                            for event in events {
                                try await outbound.write(.text(event.json))
                            }
                        }
                    } keepAlive: {
                        // WebSocket pings keep the connection alive.
                    }
                    switch reason {
                    case .overflow:
                        try await outbound.close(.unknown(4008), reason: "subscriber fell behind; reconnect with since=<last id>")
                    case .shutdown:
                        try await outbound.close(.goingAway, reason: "server shutting down")
                    case .cancelled:
                        break
                    }
                }
                // Client messages carry nothing; reading them lets the close handshake complete.
                for try await _ in inbound {}
                subscription.finish(.cancelled)
                group.cancelAll()
            }
        } onGracefulShutdown: {
            subscription.finish(.shutdown)
        }
    }

    /// Reads a stream's filter and starting point, and checks the key may see it.
    func streamRequest(_ request: Request, context: IsletRequestContext) throws -> StreamRequest {
        var filter = EventFilter(
            bundleId: request.query("bundleId"), deviceId: request.query("device"), activityId: request.query("activity")
        )
        switch context.owner {
        case .device(let own):
            // A display sees its own device, every app on it.
            if let asked = filter.deviceId, asked != own {
                throw IsletError(.forbidden, "This key belongs to device \(own)'s display; it cannot watch \(asked).")
            }
            filter.deviceId = own
        case nil where filter.deviceId != nil:
            // A display without a key, if the server lets it in (`KeylessAccess`).
            try context.requireDisplay(of: filter.deviceId!)
        default:
            if let own = try context.operatorScope() {
                if let asked = filter.bundleId, asked != own {
                    throw IsletError(.forbidden, "This key belongs to \(own); it cannot watch \(asked).")
                }
                filter.bundleId = own
            }
        }
        // Both are checked; a browser's reconnection header wins over the address it first used.
        let query = try request.query("since").map { try Self.eventID($0, name: "since") }
        let header = try request.headers[HTTPField.Name("Last-Event-ID")!].map { try Self.eventID($0, name: "Last-Event-ID") }
        let since = header ?? query
        let coalesce = request.query("coalesce")
        guard coalesce == nil || ["true", "false"].contains(coalesce!) else {
            throw IsletError(.invalidRequest, "coalesce must be true or false.")
        }
        return StreamRequest(filter: filter, since: since, coalesces: coalesce != "false", withoutTokens: context.owner == nil)
    }

    /// An event id a client resumes from: a whole number ≥ 0. One beyond any id counts as the
    /// newest, like any id ahead of the log.
    private static func eventID(_ text: String, name: String) throws -> EventID {
        let digits = text.trimmingCharacters(in: .whitespaces)
        guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            throw IsletError(.invalidRequest, "\(name) must be an event id, a whole number ≥ 0.")
        }
        return EventID(digits) ?? .max
    }

    static func serverSentEventFrames(_ events: [EncodedEvent]) -> ByteBuffer {
        // Sized once, written without interpolation: a fan-out writes this for every subscriber.
        var buffer = ByteBufferAllocator().buffer(capacity: events.reduce(0) { $0 + $1.json.utf8.count + 64 })
        for event in events {
            buffer.writeStaticString("id: ")
            buffer.writeString(String(event.id))
            buffer.writeStaticString("\nevent: ")
            buffer.writeString(event.type.rawValue)
            buffer.writeStaticString("\ndata: ")
            buffer.writeString(event.json)
            buffer.writeStaticString("\n\n")
        }
        return buffer
    }
}

extension WebSocketOutboundWriter {
    /// Closes a WebSocket that cannot be served as a browser sees it: code 4000 + the HTTP
    /// status the request would have had (4400, 4401, 4403…), the reason and message as close
    /// reason (at most 120 bytes).
    func refuse(_ error: IsletError) async throws {
        let code = UInt16(4000 + Int(error.reason.httpStatus.code))
        let reason = String(decoding: "\(error.reason.rawValue): \(error.message)".utf8.prefix(120), as: UTF8.self)
        try await close(.unknown(code), reason: reason)
    }
}
