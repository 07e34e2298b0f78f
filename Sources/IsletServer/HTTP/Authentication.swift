import Foundation
import Hummingbird
import IsletCore

/// Reads the request's API key (`Authorization: Bearer <key>`; event streams also accept
/// `?key=`, since browsers cannot set headers on them) and records who it speaks for.
///
/// A request without a key continues unauthenticated, so public routes work; routes that need a
/// key say so. A key that is present but unknown is refused at once.
struct Authentication: Sendable {
    let keys: KeyRing
    /// Whether requests with no key may act as displays and the console (when `KeylessAccess`
    /// grants it): the server listens on loopback only and `server.keylessLoopback` is on.
    let keylessAllowed: Bool

    /// Records in `context` who the request speaks for: the key's owner, or — without a key —
    /// what the keyless display allows it. One rule for `RequestChecks` and the WebSocket
    /// upgrade, which answers before any middleware so a refusal can be a close code.
    func authenticate(_ request: Request, _ context: inout IsletRequestContext) async throws {
        if let key = try Self.key(in: request) {
            context.owner = try await keys.requireOwner(of: key)
        } else {
            context.keyless = KeylessAccess.evaluate(request.head, allowed: keylessAllowed)
        }
    }

    /// The key a request carries: `Authorization: Bearer <key>`, or `?key=` on the event streams.
    ///
    /// - Throws: `unauthorized` for an `Authorization` header in another form: a bare key could
    ///   be a mistake that happens to work, or another scheme's credentials.
    static func key(in request: Request) throws -> String? {
        if let authorization = request.headers[.authorization] {
            guard let key = bearerKey(authorization) else {
                throw IsletError(.unauthorized, "Send the API key as \"Authorization: Bearer <key>\".")
            }
            return key
        }
        if takesKeyInQuery(request.uri.path) {
            return request.query("key")
        }
        return nil
    }

    /// The key of an `Authorization` field of the form `Bearer <key>`, or `nil` for any other
    /// form: the one reading of it, for the routes and the hot routes (`HotRoutes`).
    static func bearerKey(_ authorization: String) -> String? {
        let parts = authorization.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        return parts[1].trimmedOfWhitespace()
    }

    /// Whether a path takes its key as `?key=` too: the event streams, which a browser's
    /// `EventSource` and `WebSocket` open without headers.
    static func takesKeyInQuery(_ path: String) -> Bool {
        path.hasPrefix("/v1/events")
    }
}
