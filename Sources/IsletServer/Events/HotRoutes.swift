import Foundation
import HTTPTypes
import Hummingbird
import IsletCore
import IsletEngine

/// Spike of docs/engine.md §9.1 (issue 60), behind `ISLET_SPIKE_PIPELINE_UPDATE=1`: an activity's
/// update and end served from the connection's pipeline (`EventStreamHandler`), with no task — decoded
/// on the event loop, handed to the writer with a completion, answered on the loop once the
/// commit is published. It takes only what it can serve as the route would without a read, and
/// passes everything else on to the route unchanged.
struct HotRoutes: Sendable {
    let engine: Engine
    let maxBodySize: Int

    /// W3C Trace Context's header: a traced request takes the route, which makes its spans.
    private static let traceparent = HTTPField.Name("traceparent")!

    /// Whether the spike is on.
    static let enabled = ProcessInfo.processInfo.environment["ISLET_SPIKE_PIPELINE_UPDATE"] == "1"

    /// What a hot request comes to once its body has been read.
    enum Prepared: Sendable {
        /// The route's, as it came.
        case pass
        /// Refused, as the route would refuse it.
        case refuse(IsletError)
        case submit(Activity.Input, ActivityID, owner: BundleID)
    }

    /// Whether `head` may be a hot request: `POST /v1/activities/{id}/update` or `…/end`, HTTP/1.1, no query,
    /// a body of a stated length within the limit, a key, no `Idempotency-Key` and no trace.
    func takes(_ head: HTTPRequest) -> Bool {
        guard head.method == .post, let path = head.path, path.hasPrefix("/v1/activities/"), path.hasSuffix("/update") || path.hasSuffix("/end"),
            !path.contains("?"), head.headerFields[.authorization] != nil, head.headerFields[IdempotencyGate.header] == nil,
            head.headerFields[Self.traceparent] == nil, head.headerFields[.transferEncoding] == nil,
            head.headerFields[KeylessAccess.requestVersionField] != "HTTP/1.0",
            let length = head.headerFields[.contentLength].flatMap(Int.init), length <= maxBodySize
        else { return false }
        return true
    }

    func prepare(_ head: HTTPRequest, body: ByteBuffer) -> Prepared {
        guard let path = head.path else { return .pass }
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        // "", "v1", "activities", id, "update" or "end"
        guard segments.count == 5, segments[4] == "update" || segments[4] == "end", let reference = try? ActivityReference(String(segments[3])), case .id(let id) = reference else { return .pass }
        guard let authorization = head.headerFields[.authorization] else { return .pass }
        let parts = authorization.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer",
            case .app(let bundleId)? = engine.cachedKeyOwner(hash: KeyRing.hash(String(parts[1].trimmedOfWhitespace())))
        else { return .pass }
        do {
            let input: Activity.Input
            let at: Date?
            if segments[4] == "update" {
                let (update, when) = try body.withUnsafeReadableBytes { bytes throws(IsletError) in
                    try WireFormat.decodeScheduledRequest(ContentUpdate.self, from: bytes, emptyAs: nil)
                }
                (input, at) = (.update(update), when)
            } else {
                // As the route reads it: an empty body ends the activity as it is.
                let (end, when) = try body.withUnsafeReadableBytes { bytes throws(IsletError) in
                    try WireFormat.decodeScheduledRequest(EndRequest.self, from: bytes, emptyAs: EndRequest())
                }
                (input, at) = (.end(end), when)
            }
            if at != nil { return .pass }
            return .submit(input, id, owner: bundleId)
        } catch {
            return .refuse(error)
        }
    }

    /// The answer the route gives for `result`: its status and its body, in wire format.
    static func answer(_ result: Result<Outcome, any Error>) -> (HTTPResponse.Status, String) {
        do {
            return try ActivityRoutes.encodedAnswer(for: try result.get())
        } catch let error as IsletError {
            return (error.reason.httpStatus, error.wireBody)
        } catch {
            let refusal = IsletError(.internalError, "The server failed to handle the request; its log says why.")
            return (refusal.reason.httpStatus, refusal.wireBody)
        }
    }
}
