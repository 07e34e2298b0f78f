import Synchronization

/// The methods each path of the REST API takes, from the router's routes (`GET /v1/apps/{bundleId}`):
/// a request for a path that exists under other methods is answered `405 Method Not Allowed`
/// with `Allow`, as HTTP says, rather than "no route".
final class RouteTable: Sendable {
    private struct Route {
        var method: String
        var segments: [Substring]
    }

    private let routes = Mutex<[Route]>([])

    /// Takes the router's routes, once they are all added.
    func set(_ descriptions: [String]) {
        let parsed = descriptions.compactMap { description -> Route? in
            let parts = description.split(separator: " ", maxSplits: 1)
            guard parts.count == 2 else { return nil }
            return Route(method: String(parts[0]), segments: parts[1].split(separator: "/", omittingEmptySubsequences: false))
        }
        routes.withLock { $0 = parsed }
    }

    /// The methods some route takes for `path`, sorted; none when no route has the path. Where
    /// several patterns match, the router takes the one whose first differing segment is
    /// written out rather than a parameter (`/webhooks/listen` before `/webhooks/{id}`), so only
    /// that pattern's methods count.
    func methods(for path: String) -> [String] {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        let matching = routes.withLock { routes in routes.filter { Self.matches($0.segments, segments) } }
        guard let best = matching.map({ Self.literals($0.segments) }).max(by: { $0.lexicographicallyPrecedes($1) }) else { return [] }
        return Set(matching.filter { Self.literals($0.segments) == best }.map(\.method)).sorted()
    }

    /// Per segment, whether a pattern writes it out (1) or takes any (0).
    private static func literals(_ route: [Substring]) -> [Int] {
        route.map { pattern in pattern == "*" || pattern == "**" || pattern.hasPrefix(":") || (pattern.hasPrefix("{") && pattern.hasSuffix("}")) ? 0 : 1 }
    }

    /// Whether a route's segments match a path's: a `{parameter}` or `*` takes any non-empty
    /// segment, `**` the rest of the path.
    private static func matches(_ route: [Substring], _ path: [Substring]) -> Bool {
        for (index, pattern) in route.enumerated() {
            if pattern == "**" { return index < path.count }
            guard index < path.count else { return false }
            let segment = path[index]
            if pattern == "*" || (pattern.hasPrefix("{") && pattern.hasSuffix("}")) || pattern.hasPrefix(":") {
                if segment.isEmpty { return false }
            } else if pattern != segment {
                return false
            }
        }
        return route.count == path.count
    }
}
