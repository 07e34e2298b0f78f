import Foundation
import HTTPTypes
import Hummingbird
import IsletCore
import Logging
import NIOCore

extension ErrorReason {
    /// The HTTP status a REST caller receives with this reason.
    var httpStatus: HTTPResponse.Status {
        switch self {
        case .malformedJSON, .invalidRequest, .startTooFarAhead: .badRequest
        case .attributesMismatch, .contentStateMismatch, .invalidPayload, .invalidLayout: .badRequest
        case .budgetExceeded, .rateLimited: .tooManyRequests
        case .methodNotAllowed: .methodNotAllowed
        case .unauthorized: .unauthorized
        case .forbidden, .denied, .userNotVerified: .forbidden
        case .routeNotFound, .appNotFound, .deviceNotFound, .activityNotFound, .keyNotFound, .channelNotFound, .layoutNotFound, .webhookNotFound,
            .deliveryNotFound, .userNotFound, .sendNotFound:
            .notFound
        case .appAlreadyExists, .deviceAlreadyExists, .targetMaximumExceeded, .globalMaximumExceeded, .tooManyKeys: .conflict
        case .activityEnded, .activityDismissed, .activityPending, .olderTimestamp, .timestampTooFarAhead: .conflict
        case .idempotencyKeyInUse: .conflict
        case .idempotencyKeyReused: .unprocessableContent
        case .payloadTooLarge, .attributesTooLarge: .contentTooLarge
        case .internalError: .internalServerError
        case .unavailable: .serviceUnavailable
        case .appleRefused: .badGateway
        }
    }
}

/// An Islet error renders itself: `{"error": {"reason", "message"}}` with the reason's status,
/// wherever it is thrown, as Hummingbird renders any `HTTPResponseError`.
extension IsletError: HTTPResponseError {
    public var status: HTTPResponse.Status { reason.httpStatus }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        response()
    }

    /// The JSON error response: `{"error": {"reason", "message"}}` with the reason's status.
    func response() -> Response {
        var response = Response.json(encoded: wireBody, status: reason.httpStatus)
        if reason == .unauthorized {
            response.headers[.wwwAuthenticate] = "Bearer"
        }
        return response
    }

    /// The response body, `{"error": {"reason", "message"}}`, in wire format. Channel handlers
    /// that answer before Hummingbird does (a refused connection, an unparseable request) send
    /// the same bytes.
    var wireBody: String {
        (try? WireFormat.string(ErrorBody(self))) ?? #"{"error":{"reason":"\#(reason.rawValue)","message":""}}"#
    }
}

extension Response {
    /// A JSON response in Islet's wire format.
    static func json(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        json(encoded: try WireFormat.string(value), status: status)
    }

    /// A JSON response from a value already in wire format.
    static func json(encoded: String, status: HTTPResponse.Status = .ok) -> Response {
        // A final newline, so `curl` output ends where a terminal expects it.
        var buffer = ByteBuffer()
        buffer.reserveCapacity(encoded.utf8.count + 1)
        buffer.writeString(encoded)
        buffer.writeInteger(UInt8(ascii: "\n"))
        return Response(
            status: status, headers: [.contentType: "application/json; charset=utf-8"],
            body: ResponseBody(byteBuffer: buffer)
        )
    }
}

/// Answers what Hummingbird throws (no route, a body over its limit) and what no one expected
/// in Islet's JSON error form, so no route answers with an empty body or a bare 500. Islet's own
/// errors pass through: they render themselves.
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    /// The routes, to tell a path that exists under other methods (405) from no route (404).
    var routes: RouteTable?

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        do {
            return try await next(request, context)
        } catch let error as IsletError {
            throw error
        } catch let error as HTTPError where error.status == .notFound {
            let allowed = routes?.methods(for: request.uri.path) ?? []
            guard !allowed.isEmpty, !allowed.contains(request.method.rawValue) else {
                throw Self.translate(error, request: request)
            }
            var response = IsletError(
                .methodNotAllowed, "\(request.uri.path) takes \(allowed.joined(separator: ", ")), not \(request.method)."
            ).response()
            response.headers[.allow] = allowed.joined(separator: ", ")
            return response
        } catch is NIOTooManyBytesError {
            throw IsletError(.payloadTooLarge, "The request body is too large.")
        } catch let error as HTTPError {
            throw Self.translate(error, request: request)
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            context.logger.error("Request failed", metadata: ["error": "\(error)", "path": "\(request.uri.path)"])
            throw IsletError(.internalError, "The server failed to handle the request; its log says why.")
        }
    }

    private static func translate(_ error: HTTPError, request: Request) -> IsletError {
        switch error.status {
        case .notFound:
            IsletError(.routeNotFound, error.body ?? "No route \(request.method) \(request.uri.path). The API is described in docs/api.md.")
        case .contentTooLarge:
            IsletError(.payloadTooLarge, "The request body is too large.")
        case .unauthorized:
            IsletError(.unauthorized, error.body ?? "An API key is needed.")
        default:
            IsletError(.invalidRequest, error.body ?? "The request is not valid.")
        }
    }
}
