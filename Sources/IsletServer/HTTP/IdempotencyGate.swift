import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import IsletCore
import IsletEngine
import NIOCore

/// `Idempotency-Key` on the API's changes (`POST`, `PUT`, `PATCH`, `DELETE` under `/v1/`;
/// docs/audiences.md, "Exactly once under retries"): the caller's key is taken with a digest
/// of the request, the request's change holds it in the change's own transaction, and its
/// answer is kept a day; the same key and request again gets that answer
/// (`Idempotent-Replayed: true`) and changes nothing.
struct IdempotencyGate: Sendable {
    let engine: Engine
    let maxBodySize: Int

    static let header = HTTPField.Name(Idempotency.header)!
    static let replayed = HTTPField.Name("Idempotent-Replayed")!

    /// The key a request gives, when it is one the gate takes: a change's, from a caller with an
    /// API key. Keys are kept per caller, and a request without an API key is no one's: it goes
    /// to its route as if it gave none, so that a route that needs a key refuses it (`401`)
    /// rather than the gate answering from the keys of whoever else came without one.
    static func key(of request: Request, context: IsletRequestContext) -> Key? {
        guard [.post, .put, .patch, .delete].contains(request.method), request.uri.path.hasPrefix("/v1/"),
            let scope = scope(of: context), let key = request.headers[header]
        else { return nil }
        return Key(scope: scope, key: key)
    }

    /// A request's `Idempotency-Key`, and whose it is.
    struct Key {
        let scope: String
        let key: String
    }

    func respond(
        key: Key, to request: Request, context: IsletRequestContext, next: (Request, IsletRequestContext) async throws -> Response
    ) async throws -> Response {
        try Idempotency.check(key.key)
        var request = request
        // Up to the largest body a route takes (a send's); the route then holds it to its own limit.
        let limit = max(maxBodySize, SendRoutes.maximumBody)
        let body = try await request.collectBody(upTo: limit, tooLarge: "The request body is over the \(limit)-byte limit.")
        request.body = RequestBody(buffer: body)
        let claim: IdempotencyClaim
        switch try await engine.claimIdempotencyKey(scope: key.scope, key: key.key, digest: Self.digest(request, body: body)) {
        case .replay(let kept):
            var headers = HTTPFields()
            if let type = kept.contentType { headers[.contentType] = type }
            headers[Self.replayed] = "true"
            return Response(
                status: HTTPResponse.Status(code: kept.status ?? 200), headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: kept.body ?? ""))
            )
        case .proceed(let held):
            claim = held
        }
        var response: Response
        do {
            response = try await IdempotencyClaim.$current.withValue(claim) { try await next(request, context) }
        } catch let refusal as IsletError {
            response = refusal.response()
        }
        // The server's own failure is not kept: a retry runs again (unless a change committed,
        // which holds the key).
        guard response.status.code < 500 else { return response }
        let gathered = Gathered()
        let answered = response.body
        try await answered.write(Collector(gathered: gathered))
        let answer = gathered.buffer
        try await engine.answerIdempotencyKey(
            claim, status: Int(response.status.code), contentType: response.headers[.contentType], body: String(buffer: answer)
        )
        response.body = ResponseBody(byteBuffer: answer)
        return response
    }

    /// Whose key it is: keys are kept per caller, and a request without an API key has none.
    static func scope(of context: IsletRequestContext) -> String? {
        switch context.owner {
        case .admin: "admin"
        case .app(let bundleId): "app:\(bundleId)"
        case .device(let id): "device:\(id)"
        case .client(let id, _): "client:\(id)"
        case .installation(let id, _): "installation:\(id)"
        case nil: nil
        }
    }

    /// SHA-256 of the method, the path with its query, and the body.
    static func digest(_ request: Request, body: ByteBuffer) -> String {
        var hash = SHA256()
        hash.update(data: Array("\(request.method.rawValue) \(request.uri.description)\n".utf8))
        hash.update(data: body.readableBytesView)
        return hash.finalize().hexEncoded
    }

    /// A response's body, gathered (the API's answers to changes are small JSON documents).
    private final class Gathered {
        var buffer = ByteBuffer()
    }

    private struct Collector: ResponseBodyWriter {
        let gathered: Gathered

        mutating func write(_ buffer: ByteBuffer) async throws {
            var buffer = buffer
            gathered.buffer.writeBuffer(&buffer)
        }

        consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
    }
}
