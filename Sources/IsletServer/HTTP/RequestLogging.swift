import Hummingbird
import Logging

/// Logs each request's method, path and status at debug level. Not the query: event streams
/// accept `?key=`, and keys must never reach a log.
enum RequestLogging {
    static func log<Context: RequestContext>(_ request: Request, _ response: Response, context: Context) {
        context.logger.debug(
            "Request",
            metadata: [
                "method": "\(request.method)", "path": "\(request.uri.path)", "status": "\(response.status.code)",
            ]
        )
    }
}
