import Foundation
import Hummingbird
import IsletCore
import IsletEngine

/// The console (docs/console.md): its page at `/console` and every address under it (the page
/// routes on its own path, so a link to an activity can be shared), and the two answers the API
/// gained for it — `GET /v1/overview` and `GET /v1/apns/requests`. The page is a client of the
/// REST API like any other: it sees and does what its key may (an app key its own app), or, on
/// a loopback server, what the keyless console may (`IsletRequestContext.operatorScope`).
struct ConsoleRoutes {
    let engine: Engine
    /// This node's requests to its APNs endpoint, or `nil` when the endpoint is off.
    let apnsRequests: APNsRequestLog?

    func add(to router: Router<IsletRequestContext>) {
        // One page for each of its views' addresses; it reads which from its own path.
        for path in ["console", "console/activities", "console/activities/:id", "console/pushes", "console/webhooks", "console/sends", "console/installations"] {
            router.get(RouterPath(path)) { _, _ in try DisplayRoutes.file("console.html") }
        }
        router.get("v1/overview", use: overview)
        router.get("v1/apns/requests", use: requests)
    }

    @Sendable func overview(_ request: Request, context: IsletRequestContext) async throws -> Response {
        try Response.json(try await engine.overview(bundleId: try context.operatorScope()))
    }

    /// The last requests to this node's APNs endpoint, newest first, a page at a time.
    @Sendable func requests(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let scope = try context.operatorScope()
        let page = try request.page(of: Int64.self)
        var entries = apnsRequests?.entries(of: scope) ?? []
        if !context.showsTokens { entries = entries.map(\.withoutTokens) }
        // Newest first: the place is the id, negated.
        return try Response.json(Listing("requests", page.page(ofAll: entries) { -$0.id }))
    }
}
