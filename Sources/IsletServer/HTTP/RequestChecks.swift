import Hummingbird
import IsletCore
import IsletEngine

/// What every request to a route goes through before its handler, in one step: the path read as
/// the API describes it (`PathParameters`), a query parameter the operation does not take
/// refused (`KnownQueries`), the key read (`Authentication`), an `Idempotency-Key` taken
/// (`IdempotencyGate`); once answered, the request logged
/// (`RequestLogging`).
///
/// One middleware, not four: each layer of async calls leaves about 2.4 KB in its connection's
/// task for as long as the connection lives (Swift keeps a task's frame memory at its deepest
/// until the task ends), and an event stream's connection lives for hours. Measured with 10,000
/// SSE subscribers (BENCHMARKS.md).
struct RequestChecks: RouterMiddleware {
    let knownQueries: KnownQueries
    let authentication: Authentication
    /// `Idempotency-Key` on changes; a request without one does not go through it.
    let idempotency: IdempotencyGate

    func handle(
        _ request: Request, context: IsletRequestContext, next: (Request, IsletRequestContext) async throws -> Response
    ) async throws -> Response {
        var context = context
        try PathParameters.read(request, into: &context)
        try knownQueries.check(request, context: context)
        try await authentication.authenticate(request, &context)
        let request = try await Self.bounded(request, context: context)
        let response =
            if let key = IdempotencyGate.key(of: request, context: context) {
                try await idempotency.respond(key: key, to: request, context: context, next: next)
            } else {
                try await next(request, context)
            }
        RequestLogging.log(request, response, context: context)
        return response
    }

    /// A request of a client key or an installation — anyone's, since a client key ships in an
    /// app — is read to its end here, at most `InstallationLimits.maximumBody` bytes, before
    /// anything else reads it (the idempotency gate keeps bodies of megabytes): one bound for every
    /// route it may call (docs/installations.md, "Limits").
    static func bounded(_ request: Request, context: IsletRequestContext) async throws -> Request {
        switch context.owner {
        case .client?, .installation?:
            var bounded = request
            let body = try await request.collectBody(
                upTo: InstallationLimits.maximumBody,
                tooLarge: "An installation's request body is at most \(InstallationLimits.maximumBody) bytes."
            )
            bounded.body = RequestBody(buffer: body)
            return bounded
        default:
            return request
        }
    }
}
