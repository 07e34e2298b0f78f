import Foundation
import Hummingbird
import IsletCore

/// Reads the request's API key (`Authorization: Bearer <key>`; event streams also accept
/// `?key=`, since browsers cannot set headers on them) and records who it speaks for.
///
/// A request without a key continues unauthenticated, so public routes work; routes that need a
/// key say so. A key that is present but unknown is refused at once.
struct Authentication: RouterMiddleware {
    let keys: KeyRing
    /// Whether requests with no key may act as displays (the server listens on loopback only).
    let keylessDisplays: Bool

    func handle(
        _ request: Request, context: IsletRequestContext, next: (Request, IsletRequestContext) async throws -> Response
    ) async throws -> Response {
        guard let key = Self.key(in: request) else {
            var context = context
            context.keylessDisplays = keylessDisplays
            return try await next(request, context)
        }
        guard let owner = try await keys.owner(of: key) else {
            throw IsletError(.unauthorized, "The API key is not valid for this server.")
        }
        var context = context
        context.owner = owner
        return try await next(request, context)
    }

    static func key(in request: Request) -> String? {
        if let authorization = request.headers[.authorization] {
            let parts = authorization.split(separator: " ", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "bearer" {
                return String(parts[1]).trimmingCharacters(in: .whitespaces)
            }
            return authorization
        }
        if request.uri.path.hasPrefix("/v1/events") {
            return request.query("key")
        }
        return nil
    }
}
