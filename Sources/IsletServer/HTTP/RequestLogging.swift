import Hummingbird
import Logging

/// Logs each request's method, path and status at debug level. Not the query: event streams
/// accept `?key=`, and keys must never reach a log.
struct RequestLogging<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let response = try await next(request, context)
        context.logger.debug(
            "Request",
            metadata: [
                "method": "\(request.method)", "path": "\(request.uri.path)", "status": "\(response.status.code)",
            ]
        )
        return response
    }
}
