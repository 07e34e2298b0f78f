import Foundation
import Hummingbird
import IsletCore
import NIOCore

extension Request {
    /// Decodes the body as JSON in Islet's wire format, refusing bodies over `limit` bytes and
    /// naming any field that is missing, mistyped, unknown or given twice.
    ///
    /// - Parameters:
    ///   - type: The body's type.
    ///   - limit: The largest body accepted.
    ///   - emptyAs: What an empty body means; when `nil`, an empty body is an error.
    func decodeJSON<T: Decodable>(_ type: T.Type, limit: Int, emptyAs: T? = nil) async throws -> T {
        let buffer = try await collectBody(
            upTo: limit, tooLarge: "The request body is over the \(limit)-byte limit (server.maxBodySize)."
        )
        return try buffer.withUnsafeReadableBytes { bytes throws(IsletError) in
            try WireFormat.decodeRequest(T.self, from: bytes, emptyAs: emptyAs)
        }
    }

    /// The query parameter `name`, if present and not empty.
    func query(_ name: String) -> String? {
        uri.queryParameters[name[...]].map(String.init).flatMap { $0.isEmpty ? nil : $0 }
    }
}
