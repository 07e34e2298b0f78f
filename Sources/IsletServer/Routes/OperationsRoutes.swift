import Foundation
import Hummingbird
import IsletCore
import IsletEngine
import Prometheus
import NIOCore

/// `GET /healthz`, `GET /metrics` and `GET /openapi.json`: what an operator's probes, Prometheus
/// and API tools read. None needs a key.
struct OperationsRoutes {
    let engine: Engine
    let metrics: ServerMetrics
    let startedAt: Date

    func add(to router: Router<IsletRequestContext>) {
        router.get("healthz", use: health)
        router.get("metrics", use: prometheus)
        router.get("openapi.json", use: openAPI)
    }

    struct Health: Encodable {
        var status: String
        var version: String
        var uptime: Double
        var lastEventId: EventID
    }

    /// `ok` when the store can be read and its writes succeed; `unavailable` (503) otherwise —
    /// a full disk leaves reads working while every change fails.
    @Sendable func health(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let lastEventId: EventID
        do {
            lastEventId = try await engine.lastEventID()
        } catch {
            throw IsletError(.unavailable, "The store cannot be read: \(error)")
        }
        if let failure = await engine.writeFailure() {
            throw IsletError(
                .unavailable,
                "The store cannot take writes: \(failure.message), since \(ISO8601DateFormatter().string(from: failure.since))."
            )
        }
        let uptime = engine.clock.now().timeIntervalSince(startedAt)
        return try Response.json(Health(status: "ok", version: Islet.version, uptime: uptime, lastEventId: lastEventId))
    }

    @Sendable func prometheus(_ request: Request, context: IsletRequestContext) async throws -> Response {
        metrics.setActivityCounts(try await engine.activityCounts())
        var bytes: [UInt8] = []
        metrics.registry.emit(into: &bytes)
        return Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes))
        )
    }

    /// The OpenAPI 3.1 document of the REST API (`Sources/IsletServer/OpenAPI/openapi.json`,
    /// embedded in the binary); a test checks it against the routes.
    @Sendable func openAPI(_ request: Request, context: IsletRequestContext) async throws -> Response {
        guard let document = Self.document else {
            throw IsletError(.internalError, "This build has no OpenAPI document.")
        }
        return Response.json(encoded: document)
    }

    private static let document = EmbeddedFiles.files["openapi.json"]?.trimmingCharacters(in: .whitespacesAndNewlines)
}
