import Foundation

/// A request body whose fields are known, so a misspelled field is an error rather than a
/// silently ignored value.
public protocol KnownFields {
    /// The field names the body accepts at its top level.
    static var fields: Set<String> { get }
    /// The field names accepted inside nested objects, by field.
    static var nestedFields: [String: Set<String>] { get }
}

extension KnownFields {
    public static var nestedFields: [String: Set<String>] { [:] }

    /// Refuses a body that is not an object, or that has a field the type does not know.
    public static func checkFields(of json: JSONValue) throws(IsletError) {
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

    private static func check(_ members: [String: JSONValue], allowed: Set<String>, in parent: String?) throws(IsletError) {
        if let unknown = members.keys.sorted().first(where: { !allowed.contains($0) }) {
            let place = parent.map { "in \($0)" } ?? "in the body"
            throw IsletError(
                .invalidRequest,
                "Unknown field \"\(unknown)\" \(place); expected one of: \(allowed.sorted().joined(separator: ", "))."
            )
        }
    }
}

/// The fields of `content` in every body that carries one.
public let contentFields: Set<String> = ["state", "staleDate", "relevanceScore"]
/// The fields of `alert` in every body that carries one.
public let alertFields: Set<String> = ["title", "body", "sound"]
/// The fields of `dismissalPolicy` when it is an object (`{"after": <Unix seconds>}`).
public let dismissalPolicyFields: Set<String> = ["after"]
/// The fields of `pushType` when it is an object (`{"channel": "<id>"}`).
public let pushTypeFields: Set<String> = ["channel"]

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

    /// A JSON decoder for what clients send: Islet's conventions, with dates checked against
    /// `dateRange`.
    public static func requestDecoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let seconds = try container.decode(Double.self)
            guard isAcceptedDate(seconds) else {
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "\(seconds) is not a date Islet accepts; send \(dateRangeText)."
                )
            }
            return Date(timeIntervalSince1970: seconds)
        }
        return decoder
    }

    /// Decodes a request body: strict JSON (`JSONSyntax`: no field twice, bounded nesting),
    /// then the type, then no unknown field.
    ///
    /// - Parameters:
    ///   - type: The body's type.
    ///   - bytes: The body as received.
    ///   - emptyAs: What an empty (or blank) body means; when `nil`, an empty body is an error.
    /// - Throws: `IsletError` naming the field or the place that is wrong.
    public static func decodeRequest<T: Decodable & KnownFields>(
        _ type: T.Type, from bytes: UnsafeRawBufferPointer, emptyAs: T? = nil
    ) throws(IsletError) -> T {
        if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            if let emptyAs { return emptyAs }
            throw IsletError(.invalidRequest, "The request needs a JSON body.")
        }
        try checkSyntax(bytes)
        let data = Data(bytes)
        let decoder = requestDecoder()
        do {
            let value = try decoder.decode(T.self, from: data)
            try T.checkFields(of: decoder.decode(JSONValue.self, from: data))
            return value
        } catch let error as DecodingError {
            throw IsletError(decoding: error)
        } catch let error as IsletError {
            throw error
        } catch {
            throw IsletError(.invalidRequest, "The body does not have the expected shape.")
        }
    }

    /// Decodes JSON a client sent without a fixed shape (a layout document, a payload):
    /// strict JSON, then a `JSONValue`.
    public static func decodeRequestValue(from bytes: UnsafeRawBufferPointer) throws(IsletError) -> JSONValue {
        try checkSyntax(bytes)
        do {
            return try requestDecoder().decode(JSONValue.self, from: Data(bytes))
        } catch let error as DecodingError {
            throw IsletError(decoding: error)
        } catch {
            throw IsletError(.malformedJSON, "The body is not valid JSON.")
        }
    }

    /// `JSONSyntax.check`, as the error a caller receives.
    public static func checkSyntax(_ bytes: UnsafeRawBufferPointer) throws(IsletError) {
        do throws(JSONSyntax.Failure) {
            try JSONSyntax.check(bytes)
        } catch {
            switch error.kind {
            case .syntax, .tooDeep: throw IsletError(.malformedJSON, "The body is not valid JSON: \(error).")
            case .duplicateKey, .numberOutOfRange: throw IsletError(.invalidRequest, "\(error).")
            }
        }
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
        var path = ""
        for key in codingPath {
            if let index = key.intValue {
                path += "[\(index)]"
            } else {
                path += path.isEmpty ? key.stringValue : ".\(key.stringValue)"
            }
        }
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
