import Foundation
import Hummingbird
import IsletCore

/// Refuses a query parameter the route does not take, as an unknown body field is refused: a
/// misspelled filter (`?stat=active`, `?devices=kitchen`) would otherwise be ignored and return
/// everything. Which parameters each operation takes is read from the OpenAPI document the
/// server serves (`GET /openapi.json`), so the document and the check cannot disagree; `key`
/// is taken where `Authentication` reads it from the query. Only `/v1/` routes
/// are checked: a page takes whatever a browser or a link adds to its address.
struct KnownQueries: Sendable {
    /// The query names each operation takes, by `METHOD /path/{parameter}`.
    let names: [String: Set<String>]

    init(openAPI document: String?) {
        names = Self.queryNames(in: document ?? "{}")
    }

    /// Refuses the request if its query names a parameter its operation does not take.
    func check<Context: RequestContext>(_ request: Request, context: Context) throws {
        let keys = request.uri.queryParameters.map { String($0.key) }
        // The API's routes; a page (the display) takes whatever a browser or a link adds.
        if !keys.isEmpty, let path = context.endpointPath, path.hasPrefix("/v1/") {
            let allowed = (names["\(request.method) \(path)"] ?? []).union(Authentication.takesKeyInQuery(path) ? ["key"] : [])
            if let unknown = keys.sorted().first(where: { !allowed.contains($0) }) {
                let takes = allowed.subtracting(["key"]).sorted()
                throw IsletError(
                    .invalidRequest,
                    "Unknown query parameter \"\(unknown.prefix(64))\"; \(request.method) \(path) takes "
                        + (takes.isEmpty ? "none." : takes.joined(separator: ", ") + ".")
                )
            }
        }
    }

    /// Every operation's query parameter names, from an OpenAPI 3.1 document's `paths`
    /// (parameters given inline or as `#/components/parameters/…`, on the path or the operation).
    static func queryNames(in document: String) -> [String: Set<String>] {
        guard let root = try? JSONSerialization.jsonObject(with: Data(document.utf8)) as? [String: Any],
            let paths = root["paths"] as? [String: [String: Any]]
        else { return [:] }
        let components = (root["components"] as? [String: Any])?["parameters"] as? [String: [String: Any]] ?? [:]
        func queryName(_ parameter: Any) -> String? {
            guard var parameter = parameter as? [String: Any] else { return nil }
            if let reference = parameter["$ref"] as? String, let shared = components[String(reference.split(separator: "/").last ?? "")] {
                parameter = shared
            }
            return parameter["in"] as? String == "query" ? parameter["name"] as? String : nil
        }
        var names: [String: Set<String>] = [:]
        for (path, item) in paths {
            let shared = (item["parameters"] as? [Any] ?? []).compactMap(queryName)
            for (method, operation) in item where method != "parameters" {
                let own = ((operation as? [String: Any])?["parameters"] as? [Any] ?? []).compactMap(queryName)
                names["\(method.uppercased()) \(path)"] = Set(shared + own)
            }
        }
        return names
    }
}
