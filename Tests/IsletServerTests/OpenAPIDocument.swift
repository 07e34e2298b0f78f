import Foundation
import IsletCore

/// The OpenAPI document as the server serves it, read for tests: its operations, and whether a
/// real answer is one the document describes.
struct OpenAPIDocument {
    /// One documented method on one path.
    struct Operation: Hashable {
        /// `GET`, `POST`, …
        var method: String
        /// The path template, as `/v1/apps/{bundleId}`.
        var path: String
        /// The operation object.
        var spec: JSONValue

        /// As Hummingbird describes a route: `GET /v1/apps/{bundleId}`.
        var route: String { "\(method) \(path)" }
        var id: String { spec["operationId"]?.stringValue ?? route }
    }

    let root: JSONValue
    let operations: [Operation]
    var validator: SchemaValidator { SchemaValidator(root: root) }

    init(_ root: JSONValue) {
        self.root = root
        var operations: [Operation] = []
        for (path, item) in root["paths"]?.objectValue ?? [:] {
            for (method, spec) in item.objectValue ?? [:] {
                operations.append(Operation(method: method.uppercased(), path: path, spec: spec))
            }
        }
        self.operations = operations.sorted { $0.route < $1.route }
    }

    /// The operation a request reaches: the template that matches with the fewest parameters.
    func operation(_ method: String, _ path: String) -> Operation? {
        let segments = path.split(separator: "?", maxSplits: 1)[0].split(separator: "/", omittingEmptySubsequences: false)
        return operations.filter { operation in
            let template = operation.path.split(separator: "/", omittingEmptySubsequences: false)
            return operation.method == method && template.count == segments.count
                && zip(template, segments).allSatisfy { $0.hasPrefix("{") || $0 == $1 }
        }.min { $0.path.filter { $0 == "{" }.count < $1.path.filter { $0 == "{" }.count }
    }

    /// Follows a `$ref` at the top of `value`, if there is one.
    func resolved(_ value: JSONValue?) -> JSONValue? {
        guard let reference = value?["$ref"]?.stringValue else { return value }
        return validator.resolve(reference)
    }

    /// The operation's examples of a JSON request body.
    func requestExamples(_ operation: Operation) -> [String: JSONValue] {
        let examples = operation.spec["requestBody"]?["content"]?["application/json"]?["examples"]?.objectValue ?? [:]
        return examples.compactMapValues { resolved($0)?["value"] }
    }

    /// What is wrong with an answer the server gave to `method path`, by the document: an
    /// undocumented status, another content type, or a body that does not fit the schema.
    func problems(_ method: String, _ path: String, status: Int, contentType: String?, body: String) -> [String] {
        guard let operation = operation(method, path) else { return ["\(method) \(path) is not documented"] }
        guard let response = resolved(operation.spec["responses"]?[String(status)]) else {
            return ["\(operation.route) answered \(status), which the document does not list: \(body.prefix(300))"]
        }
        guard let content = response["content"]?.objectValue else {
            return body.isEmpty ? [] : ["\(operation.route) \(status) has a body the document does not describe"]
        }
        let mediaType = contentType?.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        guard let media = content[mediaType] else {
            return ["\(operation.route) \(status) answered \(mediaType), not \(content.keys.sorted())"]
        }
        guard mediaType == "application/json", let schema = media["schema"] else { return [] }
        guard let json = try? WireFormat.decoder().decode(JSONValue.self, from: Data(body.utf8)) else {
            return ["\(operation.route) \(status) is not JSON: \(body.prefix(300))"]
        }
        return validator.problems(json, schema).map { "\(operation.route) \(status): \($0)" }
    }
}
