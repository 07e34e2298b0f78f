import Foundation
import Hummingbird
import IsletCore
import IsletEngine
import NIOCore

/// `/v1/apps/{bundleId}/layouts`: how each activity type is drawn; and
/// `/v1/activities/{id}/presentation`: an activity, drawn.
struct LayoutRoutes {
    let engine: Engine

    func add(to router: Router<IsletRequestContext>) {
        router.put("v1/apps/:bundleId/layouts/:attributesType", use: put)
        router.get("v1/apps/:bundleId/layouts/:attributesType", use: get)
        router.delete("v1/apps/:bundleId/layouts/:attributesType", use: delete)
        router.get("v1/apps/:bundleId/layouts", use: list)
        router.get("v1/activities/:id/presentation", use: presentation)
    }

    private func app(_ context: IsletRequestContext) throws -> BundleID {
        try context.actingApp(requested: try context.parameters.require("bundleId"))
    }

    private func attributesType(_ context: IsletRequestContext) throws -> String {
        let name = try context.parameters.require("attributesType")
        try ActivityRequest.validate(attributesType: name)
        return name
    }

    @Sendable func put(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let bundleId = try app(context)
        let type = try attributesType(context)
        // The limit is the document's, written compactly as it is stored: a pretty-printed file
        // (the ci-build example is 141 KB with its indentation) is taken if its content fits.
        let buffer = try await request.collectBody(
            upTo: Layout.maximumSize * 4, tooLarge: "A layout document is at most \(Layout.maximumSize) bytes (written compactly)."
        )
        let document = try buffer.withUnsafeReadableBytes { bytes throws(IsletError) in
            try WireFormat.decodeRequestValue(from: bytes)
        }
        let compact = try WireFormat.string(document).utf8.count
        guard compact <= Layout.maximumSize else {
            throw IsletError(
                .payloadTooLarge, "A layout document is at most \(Layout.maximumSize) bytes written compactly; this one is \(compact)."
            )
        }
        _ = try Layout.parse(document)
        let record = try await engine.putLayout(bundleId: bundleId, attributesType: type, layout: document)
        return try Response.json(record, status: record.revision == 1 ? .created : .ok)
    }

    @Sendable func get(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let bundleId = try app(context)
        let type = try attributesType(context)
        guard let record = try await engine.layout(bundleId: bundleId, attributesType: type) else {
            throw IsletError(.layoutNotFound, "\(bundleId) has no layout for \(type); its activities are drawn with the default card.")
        }
        return try Response.json(record)
    }

    @Sendable func delete(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let bundleId = try app(context)
        let type = try attributesType(context)
        guard try await engine.deleteLayout(bundleId: bundleId, attributesType: type) else {
            throw IsletError(.layoutNotFound, "\(bundleId) has no layout for \(type).")
        }
        return Response(status: .noContent)
    }

    @Sendable func list(_ request: Request, context: IsletRequestContext) async throws -> Response {
        try Response.json(["layouts": try await engine.layouts(bundleId: try app(context))])
    }

    @Sendable func presentation(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let owner = try context.operatorScope()
        let id = try await engine.activityID(in: context, owner: owner)
        if let at = request.query("at") {
            guard let eventId = EventID(at), eventId > 0 else {
                throw IsletError(.invalidRequest, "at must be the id of an event in the activity's history.")
            }
            return try Response.json(try await engine.presentation(of: id, owner: owner, at: eventId))
        }
        return try Response.json(try await engine.presentation(of: id, owner: owner))
    }
}
