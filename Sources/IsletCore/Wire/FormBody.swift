/// An `application/x-www-form-urlencoded` body (the WHATWG URL standard's form encoding, which
/// OAuth's token requests use), read without Foundation: `URLComponents`' query setters trap on
/// bytes a URL may not hold, and a body is whatever a client sent.
///
/// The body's own bytes are printable ASCII (`!` to `~`): a raw space, control byte or
/// non-ASCII byte is not form encoding, and is refused rather than guessed at. `+` is a space,
/// `%XY` a byte; the decoded bytes of every name and value are UTF-8.
public struct FormBody: Sendable, Equatable {
    /// The pairs in the order sent; a name without `=` has the value `""`.
    public var pairs: [(name: String, value: String)]

    public static func == (lhs: FormBody, rhs: FormBody) -> Bool {
        lhs.pairs.elementsEqual(rhs.pairs) { $0.name == $1.name && $0.value == $1.value }
    }

    /// Why a body is not a form, as a sentence a client can act on.
    public struct Failure: Error, Equatable, Sendable {
        public var message: String
    }

    /// A form to send.
    public init(pairs: [(name: String, value: String)]) {
        self.pairs = pairs
    }

    /// Reads a body.
    public init(_ bytes: some Collection<UInt8>) throws(Failure) {
        if let index = bytes.firstIndex(where: { !(0x21...0x7E).contains($0) }) {
            let offset = bytes.distance(from: bytes.startIndex, to: index)
            let byte = bytes[index]
            let written = byte == UInt8(ascii: " ") ? "+ (or %20)" : "%\(Self.hex(byte))"
            throw Failure(message: "The body is not form-encoded: byte \(offset) is 0x\(Self.hex(byte)), which form encoding writes as \(written).")
        }
        pairs = []
        for field in bytes.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let equals = field.firstIndex(of: UInt8(ascii: "="))
            let name = try Self.decode(field[..<(equals ?? field.endIndex)])
            if let equals {
                pairs.append((name, try Self.decode(field[field.index(after: equals)...])))
            } else {
                pairs.append((name, ""))
            }
        }
    }

    /// The value of `name`, when it was sent once; `nil` when it was not sent.
    ///
    /// - Throws: When it was sent more than once (OAuth's rule: a parameter is never repeated).
    public func value(_ name: String) throws(Failure) -> String? {
        let values = pairs.filter { $0.name == name }
        guard values.count <= 1 else { throw Failure(message: "The parameter \(name) is sent \(values.count) times; send it once.") }
        return values.first?.value
    }

    /// The body as form encoding writes it: what `init` reads back as the same pairs.
    public var encoded: String {
        pairs.map { Self.encode($0.name) + "=" + Self.encode($0.value) }.joined(separator: "&")
    }

    private static func decode(_ bytes: some Collection<UInt8>) throws(Failure) -> String {
        var decoded: [UInt8] = []
        decoded.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index != bytes.endIndex {
            let byte = bytes[index]
            bytes.formIndex(after: &index)
            switch byte {
            case UInt8(ascii: "+"):
                decoded.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard index != bytes.endIndex, let high = bytes[index].hexDigitValue,
                    bytes.index(after: index) != bytes.endIndex, let low = bytes[bytes.index(after: index)].hexDigitValue
                else {
                    throw Failure(message: "The body is not form-encoded: a % is followed by two hexadecimal digits.")
                }
                decoded.append(high << 4 | low)
                bytes.formIndex(&index, offsetBy: 2)
            default:
                decoded.append(byte)
            }
        }
        guard let text = String(validating: decoded, as: UTF8.self) else {
            throw Failure(message: "The body is not form-encoded text: a name or value decodes to bytes that are not UTF-8.")
        }
        return text
    }

    private static func encode(_ text: String) -> String {
        var encoded = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "*"):
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: " "):
                encoded += "+"
            default:
                encoded += "%" + hex(byte)
            }
        }
        return encoded
    }


    private static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 0xF)]], as: UTF8.self)
    }
}
