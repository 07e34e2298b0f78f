import Dispatch
import Foundation
import HTTPTypes
import Hummingbird
import IsletCore
import IsletEngine
import Metrics
import Synchronization

/// docs/engine.md §9.1: an activity's update and end, and its update token, served from the connection's pipeline
/// (`EventStreamHandler`), with no task — decoded on the event loop, handed to the writer with a
/// completion, answered on the loop once the commit is published. On unless `server.hotRoutes`
/// is off, or tracing is (a traced request keeps its spans).
///
/// It takes only what it can serve as the route would without a read or a wait, and passes
/// everything else on to the route unchanged: a key this node has not seen yet (the route reads
/// it, and the engine keeps it), a key that is neither the admin's nor an app's (the route says
/// why it is refused), a prefix of an id, an `Idempotency-Key` (its claim is a read before the
/// change), a scheduled change (`at`), a chunked body or an HTTP/1.0 request. What it serves
/// goes through the route's own pieces: the engine's `applying` (`Engine.submit`), the wire
/// format's strict decode under the same limit, `ActivityRoutes.encodedAnswer`, the request log
/// line and Hummingbird's metrics under the route's labels (`HotRouteMetrics`).
struct HotRoutes: Sendable {
    let engine: Engine
    let maxBodySize: Int
    let metrics = HotRouteMetrics()

    /// The writes served here.
    enum Operation: Sendable {
        case update, end, pushToken

        /// The route's path as Hummingbird's metrics label it.
        var route: String {
            switch self {
            case .update: "/v1/activities/{id}/update"
            case .end: "/v1/activities/{id}/end"
            case .pushToken: "/v1/activities/{id}/push-token"
            }
        }

        var method: HTTPRequest.Method {
            switch self {
            case .update, .end: .post
            case .pushToken: .put
            }
        }
    }

    /// A request `takes` chose, with what the rest needs of its head, read once.
    struct Taken: Sendable {
        let operation: Operation
        /// The path's id, as sent.
        let id: Substring
        /// The bearer key.
        let key: String
        /// The path, for the log line.
        let path: String
        /// The request asked for the connection to close after its answer.
        let closes: Bool
        /// When its head was read, for the duration metric.
        let started: UInt64
    }

    /// What a hot request comes to once its body has been read.
    enum Prepared: Sendable {
        /// The route's, as it came.
        case pass
        /// Refused, as the route would refuse it.
        case refuse(IsletError)
        case submit(Activity.Input, ActivityID, owner: BundleID?)
        /// `PUT …/push-token`'s token for the activity on its phone.
        case registerToken(PushTokenBody, ActivityID, owner: BundleID?)
    }

    private static let prefix = "/v1/activities/"

    /// Whether `head` may be a hot request: `POST /v1/activities/{id}/update` or `…/end`, or
    /// `PUT …/push-token`, no query, a body of a stated length within the limit, a bearer key, no
    /// `Idempotency-Key`, HTTP/1.1 — from one pass over its path and one over its fields.
    func takes(_ head: HTTPRequest) -> Taken? {
        guard head.method == .post || head.method == .put, let path = head.path, path.hasPrefix(Self.prefix) else { return nil }
        let rest = path.utf8.dropFirst(Self.prefix.utf8.count)
        guard let slash = rest.firstIndex(of: UInt8(ascii: "/")) else { return nil }
        let operation: Operation
        switch Substring(rest[rest.index(after: slash)...]) {
        case "update": operation = .update
        case "end": operation = .end
        case "push-token": operation = .pushToken
        default: return nil
        }
        guard head.method == operation.method else { return nil }
        var key: String?
        var length: Int?
        var closes = false
        for field in head.headerFields {
            switch field.name {
            case .authorization:
                guard key == nil, let bearer = Authentication.bearerKey(field.value) else { return nil }
                key = bearer
            case .contentLength:
                guard length == nil, let value = Int(field.value), (0...maxBodySize).contains(value) else { return nil }
                length = value
            case .connection:
                closes = closes || field.value.lowercased() == "close"
            case .transferEncoding, IdempotencyGate.header:
                return nil
            case KeylessAccess.requestVersionField:
                return nil
            default:
                continue
            }
        }
        guard let key, !key.isEmpty, length != nil else { return nil }
        return Taken(
            operation: operation, id: Substring(rest[..<slash]), key: key, path: path, closes: closes,
            started: DispatchTime.now().uptimeNanoseconds
        )
    }

    func prepare(_ request: Taken, body: ByteBuffer) -> Prepared {
        guard let reference = try? ActivityReference(String(request.id)), case .id(let id) = reference else { return .pass }
        let owner: BundleID?
        switch engine.cachedKeyOwner(hash: KeyRing.hash(request.key)) {
        case .admin?: owner = nil
        case .app(let bundleId)?: owner = bundleId
        case .device?, .client?, .installation?, nil: return .pass
        }
        do {
            let input: Activity.Input
            let at: Date?
            switch request.operation {
            case .update:
                let (update, when) = try body.withUnsafeReadableBytes { bytes throws(IsletError) in
                    try WireFormat.decodeScheduledRequest(ContentUpdate.self, from: bytes, emptyAs: nil)
                }
                (input, at) = (.update(update), when)
            case .end:
                // As the route reads it: an empty body ends the activity as it is.
                let (end, when) = try body.withUnsafeReadableBytes { bytes throws(IsletError) in
                    try WireFormat.decodeScheduledRequest(EndRequest.self, from: bytes, emptyAs: EndRequest())
                }
                (input, at) = (.end(end), when)
            case .pushToken:
                let token = try body.withUnsafeReadableBytes { bytes throws(IsletError) in
                    try WireFormat.decodeRequest(PushTokenBody.self, from: bytes, emptyAs: nil)
                }
                return .registerToken(token, id, owner: owner)
            }
            if at != nil { return .pass }
            return .submit(input, id, owner: owner)
        } catch {
            return .refuse(error)
        }
    }

    /// The answer the route gives for `result`: its status, its body in wire format, and whether
    /// the route would have thrown it (Hummingbird's metrics count it as an error).
    static func answer(_ result: Result<Outcome, any Error>) -> Answer {
        answer(result) { try ActivityRoutes.encodedAnswer(for: $0) }
    }

    /// The route's answer for a registered token: `200` with the token.
    static func answer(_ result: Result<PhoneToken, any Error>) -> Answer {
        answer(result) { (.ok, try WireFormat.string($0)) }
    }

    /// The answer for `result`, its value encoded by `encode`, an error as the route's.
    private static func answer<T>(_ result: Result<T, any Error>, encode: (T) throws -> (HTTPResponse.Status, String)) -> Answer {
        do {
            let (status, body) = try encode(try result.get())
            return Answer(status: status, body: body, thrown: false)
        } catch let error as IsletError {
            return Answer(error)
        } catch {
            return Answer(IsletError(.internalError, "The server failed to handle the request; its log says why."))
        }
    }

    /// A hot request's answer.
    struct Answer: Sendable {
        let status: HTTPResponse.Status
        let body: String
        /// A refusal the route throws (a `409` for an ignored update is returned, not thrown).
        let thrown: Bool

        init(status: HTTPResponse.Status, body: String, thrown: Bool) {
            (self.status, self.body, self.thrown) = (status, body, thrown)
        }

        init(_ error: IsletError) {
            self.init(status: error.reason.httpStatus, body: error.wireBody, thrown: true)
        }
    }
}

/// Hummingbird's `MetricsMiddleware`'s metrics, under the same labels and dimensions, for a
/// request served on the loop: `/metrics` counts it as it counts the route's.
final class HotRouteMetrics: Sendable {
    private struct Key: Hashable {
        let route: String
        let method: String
        let status: Int
    }

    private struct Recorders {
        let counter: Counter
        let timer: Metrics.Timer
        let errors: Counter
    }

    private let active = [
        HTTPRequest.Method.post: Meter(label: "http.server.active_requests", dimensions: [("http.request.method", "POST")]),
        .put: Meter(label: "http.server.active_requests", dimensions: [("http.request.method", "PUT")]),
    ]
    private let recorders = Mutex<[Key: Recorders]>([:])

    /// A request is being served.
    func began(_ operation: HotRoutes.Operation) {
        active[operation.method]?.increment()
    }

    /// It is not served here after all: passed on to the route (which counts it), or left by its client.
    func notServed(_ operation: HotRoutes.Operation) {
        active[operation.method]?.decrement()
    }

    /// It is answered.
    func answered(_ operation: HotRoutes.Operation, _ answer: HotRoutes.Answer, startedAt started: UInt64) {
        let recorders = recorders(Key(route: operation.route, method: operation.method.rawValue, status: Int(answer.status.code)))
        recorders.counter.increment()
        if answer.thrown {
            recorders.errors.increment()
        } else {
            // As Hummingbird's: a thrown error's duration is not recorded.
            recorders.timer.recordNanoseconds(Int64(DispatchTime.now().uptimeNanoseconds - started))
        }
        active[operation.method]?.decrement()
    }

    private func recorders(_ key: Key) -> Recorders {
        recorders.withLock { cache in
            if let known = cache[key] { return known }
            let dimensions = [("http.route", key.route), ("http.request.method", key.method), ("http.response.status_code", "\(key.status)")]
            let made = Recorders(
                counter: Counter(label: "hb.requests", dimensions: dimensions),
                timer: Metrics.Timer(label: "http.server.request.duration", dimensions: dimensions, preferredDisplayUnit: .seconds),
                errors: Counter(
                    label: "hb.request.errors",
                    dimensions: [("http.route", key.route), ("http.request.method", key.method), ("error.type", "\(key.status)")]
                )
            )
            cache[key] = made
            return made
        }
    }
}
