import Foundation
import Hummingbird
import IsletCore
import NIOCore

extension Request {
    /// Decodes the body as JSON in Islet's wire format, refusing bodies over `limit` bytes and
    /// naming any field that is missing, mistyped or unknown.
    ///
    /// - Parameters:
    ///   - type: The body's type.
    ///   - limit: The largest body accepted.
    ///   - emptyAs: What an empty body means; when `nil`, an empty body is an error.
    func decodeJSON<T: Decodable & KnownFields>(_ type: T.Type, limit: Int, emptyAs: T? = nil) async throws -> T {
        let buffer = try await collectBody(
            upTo: limit, tooLarge: "The request body is over the \(limit)-byte limit (server.maxBodySize)."
        )
        if buffer.readableBytes == 0 || buffer.readableBytesView.allSatisfy({ [9, 10, 13, 32].contains($0) }) {
            if let emptyAs { return emptyAs }
            throw IsletError(.invalidRequest, "The request needs a JSON body.")
        }
        let data = Data(buffer.readableBytesView)
        let decoder = WireFormat.decoder()
        do {
            let value = try decoder.decode(T.self, from: data)
            try T.checkFields(of: decoder.decode(JSONValue.self, from: data))
            return value
        } catch let error as DecodingError {
            throw IsletError(decoding: error)
        }
    }

    /// The query parameter `name`, if present and not empty.
    func query(_ name: String) -> String? {
        uri.queryParameters[name[...]].map(String.init).flatMap { $0.isEmpty ? nil : $0 }
    }
}

/// A request body whose fields are known, so a misspelled field is an error rather than a
/// silently ignored value.
protocol KnownFields {
    /// The field names the body accepts at its top level.
    static var fields: Set<String> { get }
    /// The field names accepted inside nested objects, by field.
    static var nestedFields: [String: Set<String>] { get }
}

extension KnownFields {
    static var nestedFields: [String: Set<String>] { [:] }

    static func checkFields(of json: JSONValue) throws {
        guard let members = json.objectValue else {
            throw IsletError(.invalidRequest, "The body must be a JSON object, not \(json.typeName).")
        }
        try check(members, allowed: fields, in: nil)
        for (field, allowed) in nestedFields {
            if let nested = members[field]?.objectValue {
                try check(nested, allowed: allowed, in: field)
            }
        }
    }

    private static func check(_ members: [String: JSONValue], allowed: Set<String>, in parent: String?) throws {
        if let unknown = members.keys.sorted().first(where: { !allowed.contains($0) }) {
            let place = parent.map { "in \($0)" } ?? "in the body"
            throw IsletError(
                .invalidRequest,
                "Unknown field \"\(unknown)\" \(place); expected one of: \(allowed.sorted().joined(separator: ", "))."
            )
        }
    }
}

let contentFields: Set<String> = ["state", "staleDate", "relevanceScore"]
let alertFields: Set<String> = ["title", "body", "sound"]
