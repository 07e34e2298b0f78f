import Foundation
import HTTPTypes
import Hummingbird
import IsletAPNs
import IsletCore
import Logging
import NIOCore

/// An APNs refusal renders itself as Apple's servers answer: the status, a body of
/// `{"reason": "…"}` (with `"timestamp"` for 410), and the request's id in `apns-id` (or
/// `apns-request-id` for broadcasts and channels). One header is Islet's own: `islet-detail`,
/// the refusal in words (which field, which key), for people and CI logs; providers written
/// for Apple ignore it.
extension APNsError: HTTPResponseError {
    public var status: HTTPResponse.Status { HTTPResponse.Status(code: statusCode) }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        let (headers, body) = rendered(path: request.uri.path, fields: request.headers)
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// The refusal's header fields and body, for a request to `path` with `fields`.
    func rendered(path: String, fields: HTTPFields) -> (HTTPFields, Data) {
        let data = (try? JSONEncoder().encode(APNsErrorBody(reason: reason, timestamp: timestamp))) ?? Data()
        var headers: HTTPFields = [.contentType: "application/json"]
        APNsRoutes.echoRequestId(path: path, fields: fields, into: &headers)
        if let detail = Self.headerValue(detail) { headers[Self.detailHeader] = detail }
        return (headers, data)
    }

    static let detailHeader = HTTPField.Name("islet-detail")!

    /// The detail as a header value: printable ASCII on one line, at most 512 characters.
    static func headerValue(_ detail: String) -> String? {
        let printable = String(String.UnicodeScalarView(detail.unicodeScalars.map {
            (0x20..<0x7F).contains($0.value) ? $0 : "?"
        }))
        return printable.isEmpty ? nil : String(printable.prefix(512))
    }
}

/// Apple's error body.
private struct APNsErrorBody: Encodable {
    var reason: String
    var timestamp: Int64?
}

/// Answers what Hummingbird throws on the APNs endpoint (no route, a body over its limit), a
/// store that cannot be reached (`503 ServiceUnavailable`) and what no one expected as Apple
/// would; logs refusals at debug. APNs refusals render themselves.
struct APNsErrorMiddleware: RouterMiddleware {
    typealias Context = APNsRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        do {
            return try await next(request, context)
        } catch is NIOTooManyBytesError {
            throw APNsError.payloadTooLarge("The payload is too large.")
        } catch let error as HTTPError where error.status == .notFound {
            throw APNsError.badPath("No APNs route \(request.method) \(request.uri.path).")
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw Self.refusal(for: error, path: request.uri.path, logger: context.logger)
        }
    }

    /// Apple's answer for what a route threw: a refusal as it is (logged at debug), a store
    /// that cannot take the push now (a full disk, PostgreSQL out of reach) as `503
    /// ServiceUnavailable` — Apple's own answer for a server that cannot serve, which providers
    /// retry, not a 500; the store's health has logged why — and anything else as a `500`, logged.
    static func refusal(for error: any Error, path: String, logger: Logger) -> APNsError {
        switch error {
        case let error as APNsError:
            logger.debug("APNs request refused", metadata: ["reason": "\(error.reason)", "detail": "\(error.detail)"])
            return error
        case let error as IsletError where error.reason == .unavailable:
            return APNsError.serviceUnavailable(error.message)
        default:
            logger.error("APNs request failed", metadata: ["error": "\(error)", "path": "\(path)"])
            return APNsError.internalServerError("Islet could not process the request; its log says why.")
        }
    }
}
