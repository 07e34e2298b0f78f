import Foundation

/// How Islet writes JSON on the wire and in its store: one convention, used by every adapter.
///
/// All times are Unix seconds (numbers), as in APNs payloads; object keys are sorted, so a
/// value always encodes to the same bytes; slashes are not escaped.
public enum WireFormat {
    /// A JSON encoder with Islet's conventions.
    public static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    /// A JSON decoder with Islet's conventions.
    public static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        return decoder
    }

    /// Encodes a value to a JSON string with Islet's conventions.
    public static func string<T: Encodable>(_ value: T) throws -> String {
        String(decoding: try encoder().encode(value), as: UTF8.self)
    }

    /// Writes a value that writes itself (`JSONWritable`): the same bytes as the encoder, faster.
    public static func string<T: JSONWritable>(_ value: T) throws -> String {
        var json = JSONWriter()
        try value.write(to: &json)
        return json.text
    }

    /// The number of bytes `value` takes once encoded: how ActivityKit's size limits are measured.
    public static func encodedSize(_ value: JSONValue) -> Int {
        var json = JSONWriter()
        do {
            try value.write(to: &json)
            return json.bytes.count
        } catch {
            return 0
        }
    }
}

extension JSONValue {
    /// The value as a `Decodable` type, through Islet's wire format: read straight from the
    /// value when the type can (`JSONReadable`), else encoded and decoded.
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        if let readable = T.self as? any JSONReadable.Type, let value = try readable.init(json: self) as? T { return value }
        return try WireFormat.decoder().decode(T.self, from: WireFormat.encoder().encode(self))
    }
}
