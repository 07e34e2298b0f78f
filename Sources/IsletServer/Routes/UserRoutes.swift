import Foundation
import Hummingbird
import IsletCore
import IsletEngine

/// `/v1/apps/{bundleId}/users`: an app's users, their phones and tags (docs/audiences.md). The
/// app's key for its own, the admin's for any app's.
struct UserRoutes {
    let engine: Engine
    let maxBodySize: Int

    func add(to router: Router<IsletRequestContext>) {
        router.get("v1/apps/:bundleId/users", use: list)
        router.put("v1/apps/:bundleId/users/:externalId", use: put)
        router.get("v1/apps/:bundleId/users/:externalId", use: get)
        router.delete("v1/apps/:bundleId/users/:externalId", use: delete)
    }

    private func app(_ context: IsletRequestContext) throws -> BundleID {
        try context.actingApp(requested: try context.parameters.require("bundleId"))
    }

    private func externalId(_ context: IsletRequestContext) throws -> String {
        let id = try context.parameters.require("externalId")
        try AppUser.checkExternalId(id)
        return id
    }

    @Sendable func put(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let bundleId = try app(context)
        let body = try await request.decodeJSON(PutAppUserBody.self, limit: maxBodySize)
        let (user, created) = try await engine.putUser(bundleId: bundleId, externalId: try externalId(context), body)
        return try Response.json(user, status: created ? .created : .ok)
    }

    @Sendable func get(_ request: Request, context: IsletRequestContext) async throws -> Response {
        try Response.json(try await engine.user(bundleId: try app(context), externalId: try externalId(context)))
    }

    @Sendable func delete(_ request: Request, context: IsletRequestContext) async throws -> Response {
        try await engine.deleteUser(bundleId: try app(context), externalId: try externalId(context))
        return Response(status: .noContent)
    }

    /// `?tag=name:value` (repeated: every one of them), `?limit=`, `?cursor=`.
    @Sendable func list(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let bundleId = try app(context)
        var tags: [String: String] = [:]
        for given in request.uri.queryParameters.getAll("tag") {
            guard let colon = given.firstIndex(of: ":") else {
                throw IsletError(.invalidRequest, "tag: name:value, such as tag=match:123; got \"\(given.prefix(80))\".")
            }
            let name = String(given[..<colon])
            guard tags[name] == nil else { throw IsletError(.invalidRequest, "tag: \(name.prefix(64)) is given twice.") }
            tags[name] = String(given[given.index(after: colon)...])
        }
        let page = try await engine.users(bundleId: bundleId, tags: tags, page: try request.page(of: String.self))
        return try Response.json(Listing("users", page))
    }
}
