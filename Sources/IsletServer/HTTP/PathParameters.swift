import Foundation
import Hummingbird
import IsletCore

/// Reads the path as the API describes it, before any route sees it: a path with an empty
/// segment is no route, and path parameters arrive percent-decoded.
///
/// Hummingbird's router skips empty segments, so `/v1/apps//keys` reached `GET
/// /v1/apps/{bundleId}` for an app named `keys`, and `/v1/apps/` listed the apps; and it hands
/// parameters over as sent, so a key or type name a client percent-encodes (Islet's own client
/// does, as every URL library does) was stored encoded: `islet start --by-key "nightly build"`
/// made the key `nightly%20build`, and a layout for `My Type` never drew activities of that type.
enum PathParameters {
    /// Refuses a path with an empty segment; puts the percent-decoded parameters in `context`.
    static func read<Context: RequestContext>(_ request: Request, into context: inout Context) throws {
        let path = request.uri.path
        if path != "/", path.utf8.last == UInt8(ascii: "/") || Self.hasEmptySegment(path) {
            // As the router's own "no route", so what serves files for paths without one (`/pages/`) still can.
            throw HTTPError(.notFound, message: "No route \(request.method) \(path): a path segment is empty.")
        }
        var decoded = Parameters()
        for (name, value) in context.coreContext.parameters {
            // Most parameters (ids) hold no escape: Foundation's decoding is then skipped.
            guard value.utf8.contains(UInt8(ascii: "%")) else {
                decoded.append(key: name, value: value)
                continue
            }
            guard let text = value.removingPercentEncoding else {
                throw IsletError(.invalidRequest, "The path's \(name) is not valid percent-encoding.")
            }
            decoded.append(key: name, value: Substring(text))
        }
        context.coreContext.parameters = decoded
    }

    /// Whether `path` has two slashes in a row.
    private static func hasEmptySegment(_ path: String) -> Bool {
        var previous: UInt8 = 0
        for byte in path.utf8 {
            if byte == UInt8(ascii: "/"), previous == byte { return true }
            previous = byte
        }
        return false
    }
}
