import Foundation
import HTTPTypes
import Hummingbird
import IsletAPNs
import IsletCore
import Logging
import NIOCore

/// Answers every failure on the APNs endpoint as Apple's servers do: the status, a body of
/// `{"reason": "…"}` (with `"timestamp"` for 410), and the request's id in `apns-id` (or
/// `apns-request-id` for broadcasts and channels). One header is Islet's own: `islet-detail`,
/// the refusal in words (which field, which key), for people and CI logs; providers written
/// for Apple ignore it.
struct APNsErrorMiddleware: RouterMiddleware {
    typealias Context = APNsRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        do {
            return try await next(request, context)
        } catch let error as APNsError {
            context.logger.debug("APNs request refused", metadata: ["reason": "\(error.reason)", "detail": "\(error.detail)"])
            return Self.response(for: error, request: request)
        } catch is NIOTooManyBytesError {
            return Self.response(for: .payloadTooLarge("The payload is too large."), request: request)
        } catch let error as HTTPError where error.status == .notFound {
            return Self.response(for: .badPath("No APNs route \(request.method) \(request.uri.path)."), request: request)
        } catch is CancellationError {
            throw CancellationError()
        } catch let error as IsletError where error.reason == .activityNotFound || error.reason == .deviceNotFound {
            // The token's activity or device went away between the lookup and the push.
            return Self.response(for: .badDeviceToken(error.message), request: request)
        } catch {
            context.logger.error("APNs request failed", metadata: ["error": "\(error)", "path": "\(request.uri.path)"])
            return Self.response(for: .internalServerError("Islet could not process the request; its log says why."), request: request)
        }
    }

    static func response(for error: APNsError, request: Request) -> Response {
        struct Body: Encodable {
            var reason: String
            var timestamp: Int64?
        }
        let data = (try? JSONEncoder().encode(Body(reason: error.reason, timestamp: error.timestamp))) ?? Data()
        var headers: HTTPFields = [.contentType: "application/json"]
        APNsRoutes.echoRequestId(of: request, into: &headers)
        if let detail = Self.headerValue(error.detail) { headers[Self.detailHeader] = detail }
        return Response(
            status: HTTPResponse.Status(code: error.status), headers: headers,
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: data))
        )
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
