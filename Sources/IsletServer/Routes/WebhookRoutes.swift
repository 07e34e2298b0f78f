import Foundation
import Hummingbird
import IsletCore
import IsletEngine

/// `/v1/apps/{bundleId}/webhooks`: where an app's events go (docs/webhooks.md). The app's key
/// or the admin's.
struct WebhookRoutes {
    let engine: Engine
    let maxBodySize: Int

    func add(to router: Router<IsletRequestContext>) {
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
        try Response.json(["webhooks": try await engine.webhooks(bundleId: try app(context)).map { view($0) }])
    }

    @Sendable func get(_ request: Request, context: IsletRequestContext) async throws -> Response {
        try Response.json(view(try await engine.webhook(try endpoint(context), bundleId: try app(context))))
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
        try Response.json(try await engine.testWebhook(try endpoint(context), bundleId: try app(context)))
    }

    @Sendable func replay(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let bundleId = try app(context)
        let since = try await request.decodeJSON(ReplayWebhookBody.self, limit: maxBodySize).parsed()
        let endpoint = try await engine.replayWebhook(try endpoint(context), bundleId: bundleId, sinceEvent: since.event, sinceTime: since.time)
        return try Response.json(view(endpoint))
    }

    @Sendable func attempts(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let bundleId = try app(context)
        let limit = try request.query("limit").map { text throws(IsletError) -> Int in
            guard let limit = Int(text), (1...1_000).contains(limit) else { throw IsletError(.invalidRequest, "limit: 1 to 1000.") }
            return limit
        } ?? 100
        let before = try request.query("before").map { text throws(IsletError) -> Int64 in
            guard let id = Int64(text), id > 0 else { throw IsletError(.invalidRequest, "before: an attempt's id.") }
            return id
        }
        let failedOnly = request.query("failed") == "true"
        let attempts = try await engine.webhookAttempts(try endpoint(context), bundleId: bundleId, deadLettersOnly: failedOnly, before: before, limit: limit)
        return try Response.json(["attempts": attempts])
    }
}
