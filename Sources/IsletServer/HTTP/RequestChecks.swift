import Hummingbird

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
        let response =
            if let key = IdempotencyGate.key(of: request, context: context) {
                try await idempotency.respond(key: key, to: request, context: context, next: next)
            } else {
                try await next(request, context)
            }
        RequestLogging.log(request, response, context: context)
        return response
    }
}
