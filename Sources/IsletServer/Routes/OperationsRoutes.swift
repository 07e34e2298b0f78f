import Foundation
import Hummingbird
import IsletCore
import IsletStore
import Prometheus
import NIOCore

/// `GET /healthz` and `GET /metrics`: what an operator's probes and Prometheus read. Neither
/// needs a key.
struct OperationsRoutes {
    let engine: Engine
    let metrics: ServerMetrics
    let startedAt: Date

    func add(to router: Router<IsletRequestContext>) {
        router.get("healthz", use: health)
        router.get("metrics", use: prometheus)
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
            lastEventId = try await engine.store.lastEventID()
        } catch {
            throw IsletError(.unavailable, "The store cannot be read: \(error)")
        }
        if let failure = await engine.store.checkWrites() {
            throw IsletError(
                .unavailable,
                "The store cannot take writes: \(failure.message), since \(ISO8601DateFormatter().string(from: failure.since))."
            )
        }
        let uptime = engine.clock.now().timeIntervalSince(startedAt)
        return try Response.json(Health(status: "ok", version: Islet.version, uptime: uptime, lastEventId: lastEventId))
    }

    @Sendable func prometheus(_ request: Request, context: IsletRequestContext) async throws -> Response {
        metrics.setActivityCounts(try await engine.store.activityCounts())
        var bytes: [UInt8] = []
        metrics.registry.emit(into: &bytes)
        return Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes))
        )
    }
}
