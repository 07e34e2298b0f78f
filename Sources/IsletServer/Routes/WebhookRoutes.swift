import Foundation
import Hummingbird
import HummingbirdWebSocket
import IsletCore
import IsletEngine
import IsletWebhooks
import Logging
import NIOWebSocket

/// `/v1/apps/{bundleId}/webhooks`: where an app's events go (docs/webhooks.md). The app's key
/// or the admin's.
struct WebhookRoutes {
    let engine: Engine
    let maxBodySize: Int
    /// The listening sessions on this node; `nil` when it sends no webhooks.
    let listeners: WebhookListeners?
    /// Who a WebSocket upgrade speaks for, as the middleware decides it for every other request.
    let authentication: Authentication
    let logger: Logger

    func add(to router: Router<IsletRequestContext>, webSocketRouter: Router<IsletRequestContext>) {
        // Reached when a request to the WebSocket path was not upgraded: say why.
        router.get("v1/apps/:bundleId/webhooks/listen") { request, context -> Response in
            _ = try app(context)
            _ = try listenEvents(request)
            throw IsletError(.invalidRequest, "This is a WebSocket endpoint: connect with a WebSocket client (Upgrade: websocket), or run islet webhooks listen.")
        }
        webSocketRouter.ws("v1/apps/:bundleId/webhooks/listen") { _, _ in
            .upgrade([:])
        } onUpgrade: { inbound, outbound, context in
            try await listen(inbound: inbound, outbound: outbound, context: context)
        }
        router.post("v1/apps/:bundleId/webhooks", use: create)
        router.get("v1/apps/:bundleId/webhooks", use: list)
        router.get("v1/apps/:bundleId/webhooks/:id", use: get)
        router.patch("v1/apps/:bundleId/webhooks/:id", use: update)
        router.delete("v1/apps/:bundleId/webhooks/:id", use: delete)
        router.post("v1/apps/:bundleId/webhooks/:id/rotate-secret", use: rotate)
        router.post("v1/apps/:bundleId/webhooks/:id/test", use: test)
        router.post("v1/apps/:bundleId/webhooks/:id/replay", use: replay)
        router.get("v1/apps/:bundleId/webhooks/:id/attempts", use: attempts)
    }

    private func app(_ context: IsletRequestContext) throws -> BundleID {
        try context.actingApp(requested: try context.parameters.require("bundleId"))
    }

    /// The app whose endpoints the console reads, tests and replays (`operatorScope`): an app
    /// key's own, any for the admin, and any for the keyless console on a loopback server.
    /// Saving an endpoint, its address or its secret takes a key (`app`).
    private func operatedApp(_ context: IsletRequestContext) throws -> BundleID {
        try context.operatedApp(requested: try context.parameters.require("bundleId"))
    }

    private func endpoint(_ context: IsletRequestContext) throws -> String {
        try context.parameters.require("id")
    }

    private func view(_ endpoint: WebhookEndpoint, secret: Bool = false) -> WebhookEndpointView {
        WebhookEndpointView(endpoint, showingSecret: secret, now: engine.clock.now())
    }

    @Sendable func create(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let bundleId = try app(context)
        let body = try await request.decodeJSON(CreateWebhookBody.self, limit: maxBodySize)
        let endpoint = try await engine.createWebhook(
            bundleId: bundleId, url: body.url, events: try WebhookEventSelection(body.events ?? []), description: body.description ?? ""
        )
        return try Response.json(view(endpoint, secret: true), status: .created)
    }

    @Sendable func list(_ request: Request, context: IsletRequestContext) async throws -> Response {
        try Response.json(["webhooks": try await engine.webhooks(bundleId: try operatedApp(context)).map { view($0) }])
    }

    @Sendable func get(_ request: Request, context: IsletRequestContext) async throws -> Response {
        try Response.json(view(try await engine.webhook(try endpoint(context), bundleId: try operatedApp(context))))
    }

    @Sendable func update(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let bundleId = try app(context)
        let body = try await request.decodeJSON(UpdateWebhookBody.self, limit: maxBodySize)
        let change = WebhookChange(
            url: body.url, events: try body.events.map(WebhookEventSelection.init), description: body.description, enabled: body.enabled
        )
        return try Response.json(view(try await engine.updateWebhook(try endpoint(context), bundleId: bundleId, change: change)))
    }

    @Sendable func delete(_ request: Request, context: IsletRequestContext) async throws -> Response {
        try await engine.deleteWebhook(try endpoint(context), bundleId: try app(context))
        return Response(status: .noContent)
    }

    @Sendable func rotate(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let bundleId = try app(context)
        let body = try await request.decodeJSON(RotateWebhookSecretBody.self, limit: maxBodySize, emptyAs: RotateWebhookSecretBody())
        let endpoint = try await engine.rotateWebhookSecret(try endpoint(context), bundleId: bundleId, keepPrevious: body.keepPreviousFor)
        return try Response.json(view(endpoint, secret: true))
    }

    @Sendable func test(_ request: Request, context: IsletRequestContext) async throws -> Response {
        try Response.json(try await engine.testWebhook(try endpoint(context), bundleId: try operatedApp(context)))
    }

    @Sendable func replay(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let bundleId = try operatedApp(context)
        let since = try await request.decodeJSON(ReplayWebhookBody.self, limit: maxBodySize).parsed()
        let endpoint = try await engine.replayWebhook(try endpoint(context), bundleId: bundleId, sinceEvent: since.event, sinceTime: since.time)
        return try Response.json(view(endpoint))
    }

    /// The events a listening session asks for (`?events=activity.*,delivery.failed`; all when absent).
    private func listenEvents(_ request: Request) throws -> WebhookEventSelection {
        let names = request.query("events").map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } } ?? []
        return try WebhookEventSelection(names)
    }

    /// A listening session (`islet webhooks listen`): an endpoint made for it, its events sent
    /// down the socket and its answers read back, its lease renewed while it lasts, and the
    /// endpoint deleted when it ends. A refusal is a close code, 4000 + the HTTP status.
    func listen(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, context: WebSocketRouterContext<IsletRequestContext>) async throws {
        let endpoint: WebhookEndpoint
        let listeners: WebhookListeners
        do {
            var requestContext = context.requestContext
            try await authentication.authenticate(context.request, &requestContext)
            let bundleId = try requestContext.actingApp(requested: try requestContext.parameters.require("bundleId"))
            let events = try listenEvents(context.request)
            guard let available = self.listeners else {
                throw IsletError(.unavailable, "This server sends no webhooks (webhooks.enabled is off on this node).")
            }
            listeners = available
            endpoint = try await engine.openWebhookListener(bundleId: bundleId, events: events, description: "islet webhooks listen")
        } catch let error as IsletError {
            try await outbound.refuse(error)
            return
        }
        let requests = listeners.open(endpoint.id)
        defer { listeners.close(endpoint.id) }
        do {
            let ready = WebhookListenMessage(type: .ready, webhook: WebhookEndpointView(endpoint, showingSecret: true, now: engine.clock.now()))
            try await outbound.write(.text(String(decoding: try WireFormat.encoder().encode(ready), as: UTF8.self)))
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await request in requests {
                        try await outbound.write(.text(String(decoding: try WireFormat.encoder().encode(request), as: UTF8.self)))
                    }
                }
                group.addTask {
                    // The lease, renewed four times a lease, so no other node takes the endpoint.
                    while try await engine.renewWebhookListener(endpoint.id) {
                        try await engine.clock.sleep(until: engine.clock.now().addingTimeInterval(engine.webhookListenerRenewal))
                    }
                }
                for try await message in inbound.messages(maxSize: 1 << 20) {
                    guard case .text(let text) = message,
                          let answer = try? WireFormat.decoder().decode(WebhookListenMessage.self, from: Data(text.utf8)), answer.type == .response
                    else { continue }
                    listeners.answer(endpoint.id, answer)
                }
                group.cancelAll()
            }
        } catch {
            logger.debug("A listening session ended", metadata: ["endpoint": "\(endpoint.id)", "error": "\(error)"])
        }
        listeners.close(endpoint.id)
        // Not cancelled with the connection's task: the endpoint goes now, not when its lease ends.
        await Task { [engine] in try? await engine.closeWebhookListener(endpoint.id) }.value
    }

    @Sendable func attempts(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let bundleId = try operatedApp(context)
        let limit = try request.query("limit").map { text throws(IsletError) -> Int in
            guard let limit = Int(text), (1...1_000).contains(limit) else { throw IsletError(.invalidRequest, "limit: 1 to 1000.") }
            return limit
        } ?? 100
        let before = try request.query("before").map { text throws(IsletError) -> Int64 in
            guard let id = Int64(text), id > 0 else { throw IsletError(.invalidRequest, "before: an attempt's id.") }
            return id
        }
        let failedOnly = try request.query("failed").map { text throws(IsletError) -> Bool in
            guard let failed = Bool(text) else { throw IsletError(.invalidRequest, "failed: true or false.") }
            return failed
        } ?? false
        let attempts = try await engine.webhookAttempts(try endpoint(context), bundleId: bundleId, deadLettersOnly: failedOnly, before: before, limit: limit)
        return try Response.json(["attempts": attempts])
    }
}
