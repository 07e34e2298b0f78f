import Foundation

extension WireFormat {
    /// The dates a client may send: Unix seconds from 1970 to the end of year 9999. Every date
    /// inside this range can be formatted, counted in milliseconds as an `Int64`, and slept
    /// towards; a date outside it is refused where it enters, never carried to a clock.
    public static let dateRange: ClosedRange<Double> = 0...253_402_300_799

    /// Whether `seconds` is a date a client may send (see `dateRange`).
    public static func isAcceptedDate(_ seconds: Double) -> Bool {
        dateRange.contains(seconds)
    }

    /// The words that say which dates are accepted, for error messages.
    public static let dateRangeText = "Unix seconds from 0 to 253402300799 (the end of year 9999)"

    /// Decodes a request body: strict JSON (`JSONSyntax`: no field twice, bounded nesting),
    /// parsed once, then the type (`StrictDecoding`), refusing any field the type does not take.
    ///
    /// - Parameters:
    ///   - type: The body's type.
    ///   - bytes: The body as received.
    ///   - emptyAs: What an empty (or blank) body means; when `nil`, an empty body is an error.
    /// - Throws: `IsletError` naming the field or the place that is wrong.
    public static func decodeRequest<T: Decodable>(
        _ type: T.Type, from bytes: UnsafeRawBufferPointer, emptyAs: T? = nil
    ) throws(IsletError) -> T {
        if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            if let emptyAs { return emptyAs }
            throw IsletError(.invalidRequest, "The request needs a JSON body.")
        }
        return try decodeRequest(T.self, from: try decodeRequestValue(from: bytes))
    }

    /// A single start's, update's or end's body with its `"at"` beside the fields `T` takes
    /// (docs/audiences.md, "A single call at a time"): `at` taken out and read as a date, the
    /// rest decoded as `decodeRequest` does.
    public static func decodeScheduledRequest<T: Decodable>(
        _ type: T.Type, from bytes: UnsafeRawBufferPointer, emptyAs: T? = nil
    ) throws(IsletError) -> (T, at: Date?) {
        guard !bytes.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) else {
            return (try decodeRequest(T.self, from: bytes, emptyAs: emptyAs), nil)
        }
        var value = try decodeRequestValue(from: bytes)
        var at: Date?
        if case .object(var members) = value, let given = members.removeValue(forKey: "at") {
            at = try decodeRequest(ScheduledAt.self, from: .object(["at": given])).at
            value = .object(members)
        }
        return (try decodeRequest(T.self, from: value), at)
    }

    /// `at`, as every date of a request is read.
    private struct ScheduledAt: Decodable {
        var at: Date?
    }

    private static func decodeRequest<T: Decodable>(_ type: T.Type, from value: JSONValue) throws(IsletError) -> T {
        do {
            return try StrictDecoding.decode(T.self, from: value)
        } catch let error as DecodingError {
            throw IsletError(decoding: error)
        } catch let error as IsletError {
            throw error
        } catch {
            throw IsletError(.invalidRequest, "The body does not have the expected shape.")
        }
    }

    /// Decodes JSON a client sent without a fixed shape (a layout document, a payload):
    /// strict JSON, read into a `JSONValue` in the same pass (`JSONSyntax.parse`).
    public static func decodeRequestValue(from bytes: UnsafeRawBufferPointer) throws(IsletError) -> JSONValue {
        do throws(JSONSyntax.Failure) {
            return try JSONSyntax.parse(bytes)
        } catch {
            throw refusal(error)
        }
    }

    /// `JSONSyntax.check`, as the error a caller receives.
    public static func checkSyntax(_ bytes: UnsafeRawBufferPointer) throws(IsletError) {
        do throws(JSONSyntax.Failure) {
            try JSONSyntax.check(bytes)
        } catch {
            throw refusal(error)
        }
    }

    /// A syntax failure as the error a caller receives.
    private static func refusal(_ failure: JSONSyntax.Failure) -> IsletError {
        switch failure.kind {
        case .syntax, .tooDeep: IsletError(.malformedJSON, "The body is not valid JSON: \(failure).")
        case .duplicateKey, .numberOutOfRange: IsletError(.invalidRequest, "\(failure).")
        }
    }
}

extension WireFormat {
    /// A coding path as people read it: `content.alert.title`, `items[1].b`; empty for the root.
    static func path(_ codingPath: [any CodingKey]) -> String {
        var path = ""
        for key in codingPath {
            if let index = key.intValue {
                path += "[\(index)]"
            } else {
                path += path.isEmpty ? key.stringValue : ".\(key.stringValue)"
            }
        }
        return path
    }
}

extension IsletError {
    /// The error a failed JSON decoding means, naming the field that is wrong.
    public init(decoding error: DecodingError) {
        switch error {
        case .keyNotFound(let key, let context):
            self.init(.invalidRequest, "Missing field \(Self.path(context.codingPath + [key])).")
        case .valueNotFound(let type, let context):
            self.init(.invalidRequest, "\(Self.path(context.codingPath)) is null; expected \(Self.describe(type)).")
        case .typeMismatch(let type, let context):
            self.init(.invalidRequest, "\(Self.path(context.codingPath)) should be \(Self.describe(type)).")
        case .dataCorrupted(let context) where context.codingPath.isEmpty:
            let detail = (context.underlyingError as? NSError)?.userInfo[NSDebugDescriptionErrorKey] as? String
            self.init(.malformedJSON, "The body is not valid JSON\(detail.map { ": \($0)" } ?? ".")")
        case .dataCorrupted(let context):
            self.init(.invalidRequest, "\(Self.path(context.codingPath)): \(context.debugDescription)")
        @unknown default:
            self.init(.invalidRequest, "The body does not have the expected shape.")
        }
    }

    private static func path(_ codingPath: [any CodingKey]) -> String {
        let path = WireFormat.path(codingPath)
        return path.isEmpty ? "The body" : path
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Double.Type, is Int.Type, is Int64.Type, is Date.Type: "a number"
        case is Bool.Type: "true or false"
        case is JSONValue.Type: "a JSON value"
        default:
            "\(type)".hasPrefix("Dictionary") ? "an object" : "\(type)".hasPrefix("Array") ? "an array" : "\(type)"
        }
    }
}
