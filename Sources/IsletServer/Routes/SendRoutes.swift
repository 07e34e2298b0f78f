import Foundation
import Hummingbird
import IsletCore
import IsletEngine

/// `/v1/apps/{bundleId}/sends`: one call's change for an audience, now or at a time
/// (docs/audiences.md). The app's key for its own, the admin's for any app's; the console reads
/// and cancels them without a key on a loopback server (`operatedApp`), as it does webhooks.
struct SendRoutes {
    let engine: Engine
    let maxBodySize: Int

    /// The largest send body taken: 20,000 user ids of 128 bytes, and the change.
    static let maximumBody = 3 << 20

    func add(to router: Router<IsletRequestContext>) {
        router.post("v1/apps/:bundleId/sends", use: create)
        router.get("v1/apps/:bundleId/sends", use: list)
        router.get("v1/apps/:bundleId/sends/:id", use: get)
        router.patch("v1/apps/:bundleId/sends/:id", use: move)
        router.delete("v1/apps/:bundleId/sends/:id", use: cancel)
        router.get("v1/apps/:bundleId/sends/:id/targets", use: targets)
    }

    private func app(_ context: IsletRequestContext) throws -> BundleID {
        try context.actingApp(requested: try context.parameters.require("bundleId"))
    }

    /// The app whose sends the console reads and cancels: a key's own, any for the admin, and
    /// any for the keyless console on a loopback server. Making or moving one takes a key (`app`).
    private func operatedApp(_ context: IsletRequestContext) throws -> BundleID {
        try context.operatedApp(requested: try context.parameters.require("bundleId"))
    }

    private func send(_ context: IsletRequestContext) throws -> String {
        try context.parameters.require("id")
    }

    @Sendable func create(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let bundleId = try app(context)
        // Room for 20,000 user ids of the longest, whatever `server.maxBodySize` says.
        let body = try await request.decodeJSON(SendBody.self, limit: max(maxBodySize, Self.maximumBody))
        return try Response.json(try await engine.createSend(bundleId: bundleId, body), status: .accepted)
    }

    @Sendable func list(_ request: Request, context: IsletRequestContext) async throws -> Response {
        try Response.json(Listing("sends", try await engine.sends(bundleId: try operatedApp(context), page: try request.page(of: String.self))))
    }

    @Sendable func get(_ request: Request, context: IsletRequestContext) async throws -> Response {
        try Response.json(try await engine.send(try send(context), bundleId: try operatedApp(context)))
    }

    /// `{"at": …}`: a scheduled send moved.
    @Sendable func move(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let bundleId = try app(context)
        let body = try await request.decodeJSON(MoveSendBody.self, limit: maxBodySize)
        return try Response.json(try await engine.moveSend(try send(context), bundleId: bundleId, to: body.at))
    }

    @Sendable func cancel(_ request: Request, context: IsletRequestContext) async throws -> Response {
        try Response.json(try await engine.cancelSend(try send(context), bundleId: try operatedApp(context)))
    }

    /// `?outcome=failed`, `?limit=`, `?cursor=`.
    @Sendable func targets(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let bundleId = try operatedApp(context)
        let outcome = try request.query("outcome").map { given in
            guard let outcome = SendTargetOutcome(rawValue: given) else {
                throw IsletError(
                    .invalidRequest, "outcome: one of \(SendTargetOutcome.allCases.map(\.rawValue).joined(separator: ", ")); got \"\(given.prefix(40))\"."
                )
            }
            return outcome
        }
        let page = try await engine.sendTargets(try send(context), bundleId: bundleId, outcome: outcome, page: try request.page(of: Int64.self))
        return try Response.json(Listing("targets", page))
    }
}
