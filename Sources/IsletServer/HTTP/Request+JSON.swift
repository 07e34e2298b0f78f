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
        try await body(upTo: limit).withUnsafeReadableBytes { bytes throws(IsletError) in
            try WireFormat.decodeRequest(T.self, from: bytes, emptyAs: emptyAs)
        }
    }

    /// `decodeJSON`, for a single start, update or end, with its `"at"`: when given, the call
    /// is kept as a send and carried out then (docs/audiences.md, "A single call at a time").
    func decodeScheduledJSON<T: Decodable>(_ type: T.Type, limit: Int, emptyAs: T? = nil) async throws -> (T, at: Date?) {
        try await body(upTo: limit).withUnsafeReadableBytes { bytes throws(IsletError) in
            try WireFormat.decodeScheduledRequest(T.self, from: bytes, emptyAs: emptyAs)
        }
    }

    /// The body, up to `limit` bytes (`server.maxBodySize`).
    private func body(upTo limit: Int) async throws -> ByteBuffer {
        try await collectBody(upTo: limit, tooLarge: "The request body is over the \(limit)-byte limit (server.maxBodySize).")
    }

    /// The page a listing's request asks for: `?limit=` (1 to 1,000, 100 when not given) and
    /// `?cursor=` (the previous page's `next`).
    func page<Place>(of type: Place.Type) throws(IsletError) -> PageRequest<Place> {
        try PageRequest(limit: query("limit"), cursor: query("cursor"))
    }

    /// A moment given in the query as an API date is written, seconds since 1970, or in ISO 8601.
    func date(_ name: String) throws(IsletError) -> Date? {
        guard let text = query(name) else { return nil }
        if let seconds = Double(text), seconds.isFinite { return Date(timeIntervalSince1970: seconds) }
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions.insert(.withFractionalSeconds)
        if let date = formatter.date(from: text) { return date }
        throw IsletError(.invalidRequest, "\(name) must be a date: seconds since 1970, or ISO 8601 such as 2026-11-24T09:30:00Z.")
    }

    /// The query parameter `name`, if present and not empty.
    func query(_ name: String) -> String? {
        uri.queryParameters[name[...]].map(String.init).flatMap { $0.isEmpty ? nil : $0 }
    }
}
