import Foundation
import Hummingbird
import IsletCore
import IsletEngine
import Prometheus
import NIOCore

/// `GET /healthz`, `GET /metrics`, `GET /openapi.json` and `GET /v1/whoami`: what an operator's
/// probes, Prometheus, API tools and `islet status` read. None needs a key.
struct OperationsRoutes {
    let engine: Engine
    let metrics: ServerMetrics
    let startedAt: Date

    func add(to router: Router<IsletRequestContext>) {
        router.get("healthz", use: health)
        router.get("metrics", use: prometheus)
        router.get("openapi.json", use: openAPI)
        router.get("v1/whoami", use: whoami)
    }

    /// Whom the request's key speaks for; without one, whether it has the keyless rights.
    @Sendable func whoami(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let identity =
            switch context.owner {
            case .admin: KeyIdentity(kind: .admin)
            case .app(let bundleId): KeyIdentity(kind: .app, bundleId: bundleId)
            case .device(let deviceId): KeyIdentity(kind: .device, deviceId: deviceId)
            case .client(_, let bundleId): KeyIdentity(kind: .client, bundleId: bundleId)
            case .installation(let id, let bundleId): KeyIdentity(kind: .installation, bundleId: bundleId, deviceId: id)
            case nil:
                switch context.keyless {
                case .granted: KeyIdentity(kind: .none, keyless: true)
                case .refused(let why): KeyIdentity(kind: .none, keyless: false, message: why)
                case .needsKey:
                    KeyIdentity(kind: .none, keyless: false, message: "This server lets no one in without a key: \(KeylessAccess.whyKeysAreNeeded).")
                }
            }
        return try Response.json(identity)
    }

    struct Health: Encodable {
        var status: String
        var version: String
        var uptime: Double
        var lastEventId: EventID
        /// Where this node's data is (several nodes on PostgreSQL show the same database), and
        /// what a failover keeps.
        var store: StoreOverview
        var delivery: Delivery

        /// Delivery to real phones: `degraded` when it does not keep up (Apple unreachable, a
        /// credential refused) — the server itself is fine, and changes are still taken.
        struct Delivery: Encodable {
            var status: String
            var outbox: Int
            var oldestUndeliveredSeconds: Double?
            var reason: String?
        }
    }

    /// `ok` when the store can be read and its writes succeed; `unavailable` (503) otherwise —
    /// a full disk leaves reads working while every change fails.
    @Sendable func health(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let lastEventId: EventID
        let store: StoreOverview
        do {
            lastEventId = try await engine.lastEventID()
            store = try await engine.storeOverview()
        } catch {
            throw IsletError(.unavailable, "The store cannot be read: \(error)")
        }
        if let failure = await engine.writeFailure() {
            throw IsletError(
                .unavailable,
                "The store cannot take writes: \(failure.message), since \(ISO8601DateFormatter().string(from: failure.since))."
            )
        }
        let now = engine.clock.now()
        let delivery = try await engine.deliveryHealth()
        return try Response.json(Health(
            status: "ok", version: Islet.version, uptime: now.timeIntervalSince(startedAt), lastEventId: lastEventId,
            store: store,
            delivery: Health.Delivery(
                status: delivery.degraded == nil ? "ok" : "degraded", outbox: delivery.depth,
                oldestUndeliveredSeconds: delivery.oldest.map { max(0, now.timeIntervalSince($0)) }, reason: delivery.degradedWithoutNames
            )
        ))
    }

    @Sendable func prometheus(_ request: Request, context: IsletRequestContext) async throws -> Response {
        metrics.setActivityCounts(try await engine.activityCounts())
        metrics.setOutbox(try await engine.deliveryHealth(), now: engine.clock.now())
        metrics.setStoreCounts(changesRunAgain: engine.changesRunAgain, eventReads: engine.eventReads)
        let store = engine.storeFacts
        metrics.setStore(
            writable: await engine.writeFailure() == nil,
            disk: store.kind == "sqlite" ? DiskSpace.of((store.location as NSString).deletingLastPathComponent) : nil
        )
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
