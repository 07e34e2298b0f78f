import Hummingbird
import Logging

/// Logs each request's method, path and status at debug level. Not the query: event streams
/// accept `?key=`, and keys must never reach a log.
enum RequestLogging {
    static func log<Context: RequestContext>(_ request: Request, _ response: Response, context: Context) {
        log(method: "\(request.method)", path: request.uri.path, status: response.status.code, logger: context.logger)
    }

    /// The same line, for a request served in the pipeline (`HotRoutes`); `path` without its query.
    static func log(method: String, path: String, status: Int, logger: Logger) {
        logger.debug("Request", metadata: ["method": "\(method)", "path": "\(path)", "status": "\(status)"])
    }
}
