import Foundation

/// A strict check of JSON text (RFC 8259), run on every body a client sends before it is
/// decoded, for what `JSONDecoder` lets through or reports vaguely.
///
/// - A field that appears twice in one object is refused: decoders disagree on which copy wins
///   (Foundation keeps the first, most others the last), so the server and a phone could read
///   different values from the same bytes.
/// - Nesting deeper than `maxDepth` is refused before any recursive decoder sees it.
/// - A number too large for a `Double` (or too small to be told from zero) is refused with its
///   place, instead of "not valid JSON".
/// - Every refusal says where: line, column and the path of the value (`content.state.speed`).
///
/// `check` does not build values: it walks the bytes once, keeping only the keys of the objects
/// that are open. `parse` builds the value in the same walk.
public enum JSONSyntax {
    /// The deepest nesting of objects and arrays accepted.
    public static let maxDepth = 64

    /// Why a text is refused.
    public struct Failure: Error, Hashable, Sendable, CustomStringConvertible {
        /// What kind of trouble: a syntax error, or valid syntax Islet refuses.
        public enum Kind: Hashable, Sendable {
            /// Not JSON: a missing comma, an unknown escape, invalid UTF-8, trailing text…
            case syntax
            /// A field given twice in one object.
            case duplicateKey
            /// Nested deeper than `maxDepth`.
            case tooDeep
            /// A number a `Double` cannot hold.
            case numberOutOfRange
        }

        public var kind: Kind
        /// What is wrong, in words.
        public var problem: String
        /// Where: 1-based line and column (in bytes) of the offending byte.
        public var line: Int
        public var column: Int
        /// The path of the value being read (`content.state`, `items[2]`), empty at the top.
        public var path: String

        public var description: String {
            let place = path.isEmpty ? "" : " in \(path)"
            return "\(problem)\(place) (line \(line), column \(column))"
        }
    }

    /// Checks `bytes` is one JSON value, with surrounding whitespace only.
    public static func check(_ bytes: UnsafeRawBufferPointer) throws(Failure) {
        var scanner = Scanner(bytes: bytes, building: false)
        _ = try scanner.document()
    }

    /// Checks `bytes` as `check` does and reads the value in the same pass: what
    /// `JSONDecoder` would decode as a `JSONValue` (a number is `.integer` when its value is a
    /// whole number an `Int64` holds, as Foundation decides), without a second walk over the text.
    public static func parse(_ bytes: UnsafeRawBufferPointer) throws(Failure) -> JSONValue {
        var scanner = Scanner(bytes: bytes, building: true)
        return try scanner.document()
    }

    /// Checks `bytes` (an array, `Data`…) is one JSON value, with surrounding whitespace only.
    public static func check(_ bytes: some ContiguousBytes) throws(Failure) {
        let failure: Failure? = bytes.withUnsafeBytes { buffer in
            do throws(Failure) {
                try check(buffer)
                return nil
            } catch {
                return error
            }
        }
        if let failure { throw failure }
    }

    /// Reads `bytes` (an array, `Data`…) as `parse` does.
    public static func parse(_ bytes: some ContiguousBytes) throws(Failure) -> JSONValue {
        let result: Result<JSONValue, Failure> = bytes.withUnsafeBytes { buffer in
            do throws(Failure) {
                return .success(try parse(buffer))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }
}

extension JSONSyntax {
    /// One pass over the bytes. `path` holds, per open container, the key or index being read.
    fileprivate struct Scanner {
        enum Step {
            case key(String)
            case index(Int)
            /// An object before its first field name.
            case open
        }

        let bytes: UnsafeRawBufferPointer
        /// Whether values are built (`parse`) or only checked (`check`).
        let building: Bool
        var position = 0
        var path: [Step] = []

        init(bytes: UnsafeRawBufferPointer, building: Bool) {
            self.bytes = bytes
            self.building = building
        }

        /// Reads the one value; `.null` when not building.
        mutating func document() throws(Failure) -> JSONValue {
            // A UTF-8 byte order mark, which some editors write and Foundation skips.
            if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { position = 3 }
            skipWhitespace()
            let read = try value()
            skipWhitespace()
            if position < bytes.count {
                throw failure(.syntax, "Unexpected text after the JSON value")
            }
            return read
        }

        /// Reads a value; `.null` for anything when not building.
        private mutating func value() throws(Failure) -> JSONValue {
            guard let byte = peek() else { throw failure(.syntax, "Unexpected end of JSON; expected a value") }
            switch byte {
            case UInt8(ascii: "{"): return try object()
            case UInt8(ascii: "["): return try array()
            case UInt8(ascii: "\""): return try string(keeping: building).map(JSONValue.string) ?? .null
            case UInt8(ascii: "t"):
                try literal("true")
                return building ? .bool(true) : .null
            case UInt8(ascii: "f"):
                try literal("false")
                return building ? .bool(false) : .null
            case UInt8(ascii: "n"):
                try literal("null")
                return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
            default: throw failure(.syntax, "Unexpected character \(Self.show(byte)); expected a value")
            }
        }

        private mutating func object() throws(Failure) -> JSONValue {
            try enter()
            position += 1
            skipWhitespace()
            if peek() == UInt8(ascii: "}") {
                position += 1
                path.removeLast()
                return building ? .object([:]) : .null
            }
            var members: [String: JSONValue] = [:]
            var keys: [String] = []
            var keySet: Set<String> = []
            while true {
                path[path.count - 1] = .open
                guard peek() == UInt8(ascii: "\"") else {
                    throw failure(.syntax, "Expected a field name in double quotes")
                }
                let keyStart = position
                let key = try string(keeping: true) ?? ""
                // Few objects have many fields: a list is cheaper until it is not.
                let seen: Bool
                if keys.count < 16 {
                    seen = keys.contains(key)
                    keys.append(key)
                    if keys.count == 16 { keySet = Set(keys) }
                } else {
                    seen = !keySet.insert(key).inserted
                }
                if seen {
                    position = keyStart
                    throw failure(.duplicateKey, "Field \"\(key)\" appears twice")
                }
                path[path.count - 1] = .key(key)
                skipWhitespace()
                try expect(UInt8(ascii: ":"), "Expected ':' after a field name")
                skipWhitespace()
                let member = try value()
                if building { members[key] = member }
                skipWhitespace()
                guard let next = peek() else { throw failure(.syntax, "Unexpected end of JSON in an object") }
                position += 1
                if next == UInt8(ascii: "}") { break }
                guard next == UInt8(ascii: ",") else {
                    position -= 1
                    throw failure(.syntax, "Expected ',' or '}' after a field, found \(Self.show(next))")
                }
                skipWhitespace()
            }
            path.removeLast()
            return building ? .object(members) : .null
        }

        private mutating func array() throws(Failure) -> JSONValue {
            try enter()
            position += 1
            skipWhitespace()
            if peek() == UInt8(ascii: "]") {
                position += 1
                path.removeLast()
                return building ? .array([]) : .null
            }
            var elements: [JSONValue] = []
            var index = 0
            while true {
                path[path.count - 1] = .index(index)
                let element = try value()
                if building { elements.append(element) }
                skipWhitespace()
                guard let next = peek() else { throw failure(.syntax, "Unexpected end of JSON in an array") }
                position += 1
                if next == UInt8(ascii: "]") { break }
                guard next == UInt8(ascii: ",") else {
                    position -= 1
                    throw failure(.syntax, "Expected ',' or ']' after an element, found \(Self.show(next))")
                }
                skipWhitespace()
                index += 1
            }
            path.removeLast()
            return building ? .array(elements) : .null
        }

        /// Opens a container, refusing one nested too deep.
        private mutating func enter() throws(Failure) {
            guard path.count < JSONSyntax.maxDepth else {
                throw failure(.tooDeep, "Nested deeper than \(JSONSyntax.maxDepth) objects and arrays")
            }
            path.append(.open)
        }

        /// Reads a string; returns its decoded text when `keeping` (field names), else `nil`.
        private mutating func string(keeping: Bool) throws(Failure) -> String? {
            position += 1
            var units: [UInt16] = []
            var runStart = position
            var plain: [UInt8] = []
            while true {
                guard let byte = peek() else { throw failure(.syntax, "Unterminated string") }
                switch byte {
                case UInt8(ascii: "\""):
                    if keeping { plain.append(contentsOf: bytes[runStart..<position]) }
                    position += 1
                    guard keeping else { return nil }
                    if !units.isEmpty {
                        // Escapes were seen: the whole key was collected as UTF-16.
                        units.append(contentsOf: String(decoding: plain, as: UTF8.self).utf16)
                        return String(decoding: units, as: UTF16.self)
                    }
                    return String(decoding: plain, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    if keeping {
                        plain.append(contentsOf: bytes[runStart..<position])
                        units.append(contentsOf: String(decoding: plain, as: UTF8.self).utf16)
                        plain.removeAll()
                    }
                    let unit = try escape()
                    if keeping { units.append(unit) }
                    if (0xDC00...0xDFFF).contains(unit) {
                        throw failure(.syntax, "A lone low surrogate \\u\(String(unit, radix: 16)) in a string")
                    }
                    if (0xD800...0xDBFF).contains(unit) {
                        // A high surrogate needs its low half right after it.
                        guard peek() == UInt8(ascii: "\\") else {
                            throw failure(.syntax, "A lone high surrogate \\u\(String(unit, radix: 16)) in a string")
                        }
                        let low = try escape()
                        guard (0xDC00...0xDFFF).contains(low) else {
                            throw failure(.syntax, "A high surrogate \\u\(String(unit, radix: 16)) not followed by a low one")
                        }
                        if keeping { units.append(low) }
                    }
                    runStart = position
                case 0..<0x20:
                    throw failure(.syntax, "Control character \(Self.show(byte)) in a string; escape it")
                case 0x80...:
                    try utf8Sequence()
                default:
                    position += 1
                }
            }
        }

        /// Reads one escape after its backslash; returns the UTF-16 unit it stands for.
        private mutating func escape() throws(Failure) -> UInt16 {
            position += 1
            guard let byte = peek() else { throw failure(.syntax, "Unterminated escape") }
            position += 1
            switch byte {
            case UInt8(ascii: "\""): return 0x22
            case UInt8(ascii: "\\"): return 0x5C
            case UInt8(ascii: "/"): return 0x2F
            case UInt8(ascii: "b"): return 0x08
            case UInt8(ascii: "f"): return 0x0C
            case UInt8(ascii: "n"): return 0x0A
            case UInt8(ascii: "r"): return 0x0D
            case UInt8(ascii: "t"): return 0x09
            case UInt8(ascii: "u"):
                var unit: UInt16 = 0
                for _ in 0..<4 {
                    guard let digit = peek().flatMap(\.hexDigitValue) else {
                        throw failure(.syntax, "\\u must be followed by four hexadecimal digits")
                    }
                    unit = unit << 4 | UInt16(digit)
                    position += 1
                }
                return unit
            default:
                position -= 1
                throw failure(.syntax, "Unknown escape \\\(Self.show(byte))")
            }
        }

        /// Steps over one well-formed multi-byte UTF-8 sequence.
        private mutating func utf8Sequence() throws(Failure) {
            let lead = bytes[position]
            let length: Int
            var lower: UInt8 = 0x80
            var upper: UInt8 = 0xBF
            switch lead {
            case 0xC2...0xDF: length = 2
            case 0xE0: length = 3; lower = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED: length = 3; upper = 0x9F
            case 0xF0: length = 4; lower = 0x90
            case 0xF1...0xF3: length = 4
            case 0xF4: length = 4; upper = 0x8F
            default: throw failure(.syntax, "Invalid UTF-8")
            }
            guard position + length <= bytes.count else { throw failure(.syntax, "Invalid UTF-8") }
            for offset in 1..<length {
                let byte = bytes[position + offset]
                let (low, high) = offset == 1 ? (lower, upper) : (0x80, 0xBF)
                guard byte >= low, byte <= high else { throw failure(.syntax, "Invalid UTF-8") }
            }
            position += length
        }

        /// Reads a number. Built, it is `.integer` when its value is a whole number an `Int64`
        /// holds — `1.0` and `1e2` too, as Foundation's decoder decides — and `.number` otherwise.
        private mutating func number() throws(Failure) -> JSONValue {
            let start = position
            if peek() == UInt8(ascii: "-") { position += 1 }
            guard let first = peek(), Self.isDigit(first) else {
                throw failure(.syntax, "A number needs digits")
            }
            position += 1
            if first != UInt8(ascii: "0") { skipDigits() }
            var nonZeroMantissa = first != UInt8(ascii: "0")
            var isWhole = true
            if peek() == UInt8(ascii: ".") {
                isWhole = false
                position += 1
                guard let digit = peek(), Self.isDigit(digit) else { throw failure(.syntax, "A decimal point needs digits after it") }
                let fraction = position
                skipDigits()
                if bytes[fraction..<position].contains(where: { $0 != UInt8(ascii: "0") }) { nonZeroMantissa = true }
            }
            var hasExponent = false
            if let byte = peek(), byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
                hasExponent = true
                isWhole = false
                position += 1
                if let sign = peek(), sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") { position += 1 }
                guard let digit = peek(), Self.isDigit(digit) else { throw failure(.syntax, "An exponent needs digits") }
                skipDigits()
            }
            // Only long numbers or exponents can leave a Double's range.
            let mayLeaveRange = hasExponent || position - start > 308
            guard building || mayLeaveRange else { return .null }
            let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
            if isWhole, let whole = Int64(text) { return building ? .integer(whole) : .null }
            guard let value = Double(text) else { return .null }
            if mayLeaveRange, !value.isFinite || (value == 0 && nonZeroMantissa) {
                position = start
                throw failure(.numberOutOfRange, "The number \(text.prefix(40)) is out of range for a 64-bit floating point number")
            }
            guard building else { return .null }
            // A fraction or an exponent that comes to a whole number is whole; digits alone
            // beyond an Int64's range are not (as Foundation decides).
            if !isWhole, let whole = Self.whole(text, readAs: value) { return .integer(whole) }
            return .number(value)
        }

        /// The whole number `text` (a number with a fraction or an exponent) names, if it names
        /// one an `Int64` holds. Below 2⁵³ its `Double` says so exactly, as Foundation reads it.
        /// From 2⁵³ to 2⁶³, where a `Double` cannot tell neighbouring integers apart, the digits
        /// decide: `9007199254740993.0` is 9007199254740993 and `9223372036854775.0808` is not
        /// whole (Foundation's decoder answers erratically there, truncating some fractions).
        /// From 2⁶³ no `Int64` holds it.
        private static func whole(_ text: String, readAs value: Double) -> Int64? {
            guard value.magnitude >= 0x1p53 else { return Int64(exactly: value) }
            guard value.magnitude < 0x1p63 else { return nil }
            let negative = text.hasPrefix("-")
            let unsigned = text.drop(while: { $0 == "-" })
            let mantissa = unsigned.prefix(while: { $0 != "e" && $0 != "E" })
            let exponentText = unsigned.dropFirst(mantissa.count + 1)
            // No body holds 2⁴⁰ zeros to bring a larger exponent back below 2⁶³.
            guard let exponent = exponentText.isEmpty ? 0 : Int(exponentText), exponent.magnitude < 1 << 40 else { return nil }
            let integerDigits = mantissa.prefix(while: { $0 != "." })
            let allDigits = integerDigits + mantissa.dropFirst(integerDigits.count + 1)
            let digits = allDigits.drop(while: { $0 == "0" })
            // Where the decimal point falls in `digits`, once the exponent has moved it.
            let point = integerDigits.count + exponent - (allDigits.count - digits.count)
            guard point >= 0, point <= 19, digits.dropFirst(point).allSatisfy({ $0 == "0" }) else { return nil }
            let wholeDigits = String(digits.prefix(point)) + String(repeating: "0", count: max(0, point - digits.count))
            return Int64((negative ? "-" : "") + wholeDigits)
        }

        private mutating func literal(_ word: StaticString) throws(Failure) {
            let count = word.utf8CodeUnitCount
            let matches = position + count <= bytes.count && word.withUTF8Buffer { expected in
                (0..<count).allSatisfy { bytes[position + $0] == expected[$0] }
            }
            guard matches else { throw failure(.syntax, "Unexpected character \(Self.show(bytes[position])); expected a value") }
            position += count
        }

        private mutating func expect(_ byte: UInt8, _ problem: String) throws(Failure) {
            guard peek() == byte else { throw failure(.syntax, problem) }
            position += 1
        }

        private func peek() -> UInt8? {
            position < bytes.count ? bytes[position] : nil
        }

        private mutating func skipWhitespace() {
            while let byte = peek(), byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 {
                position += 1
            }
        }

        private mutating func skipDigits() {
            while let byte = peek(), Self.isDigit(byte) { position += 1 }
        }

        private static func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }


        /// A byte as a person reads it in a message.
        private static func show(_ byte: UInt8) -> String {
            (0x21..<0x7F).contains(byte) ? "'\(Character(Unicode.Scalar(byte)))'" : "byte 0x\(String(byte, radix: 16))"
        }

        private func failure(_ kind: Failure.Kind, _ problem: String) -> Failure {
            var line = 1
            var lineStart = 0
            for index in 0..<min(position, bytes.count) where bytes[index] == 0x0A {
                line += 1
                lineStart = index + 1
            }
            var text = ""
            for step in path {
                switch step {
                case .key(let key): text += text.isEmpty ? key : ".\(key)"
                case .index(let index): text += "[\(index)]"
                case .open: break
                }
            }
            return Failure(kind: kind, problem: problem, line: line, column: position - lineStart + 1, path: text)
        }
    }
}
