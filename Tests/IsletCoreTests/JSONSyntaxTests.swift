import Foundation
import IsletCore
import Testing

@Suite("Strict JSON")
struct JSONSyntaxTests {
    private func failure(_ text: String) -> JSONSyntax.Failure? {
        do {
            try JSONSyntax.check(Array(text.utf8))
            return nil
        } catch {
            return error
        }
    }

    @Test(arguments: [
        #"{}"#, #"[]"#, #" {"a": [1, -2.5e3, 0, 0.0, 1E+2, true, false, null, "x\"\\\/\b\f\n\r\t\u00e9"]} "#,
        #""é 日本 🚲 \ud83d\udeb2""#, "\u{FEFF}{}", #"{"a": {"a": {"a": 1}}}"#, #"{"a": 1, "A": 2}"#, "-0", "1e-300", #"{"":1}"#,
        "[" + String(repeating: "[", count: 62) + String(repeating: "]", count: 63),
    ])
    func validJSONPasses(_ text: String) throws {
        #expect(failure(text) == nil)
        // Foundation reads everything the check lets through.
        _ = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
    }

    @Test(arguments: [
        "", " ", "{", "[1,]", #"{"a":1,}"#, "01", "1.", ".5", "+1", "1e", "tru", "nul", "NaN", "Infinity",
        #""\x""#, #""\u12""#, "\"a\nb\"", #"{"a" 1}"#, #"{a: 1}"#, "[1] [2]", "'x'", #""\ud800""#, #""\udc00x""#, #""\ud800\u0041""#,
    ])
    func malformedJSONIsRefused(_ text: String) {
        #expect(failure(text)?.kind == .syntax)
    }

    @Test func invalidUTF8IsRefused() {
        for bytes: [UInt8] in [[0x22, 0xC3, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0xFF, 0x22], [0x22, 0xC0, 0xAF, 0x22]] {
            #expect(throws: JSONSyntax.Failure.self) { try JSONSyntax.check(bytes) }
        }
    }

    @Test func aFieldGivenTwiceIsRefusedWithItsPlace() throws {
        let text = "{\"content\": {\"state\": {\"speed\": 1,\n \"speed\": 2}}}"
        let found = try #require(failure(text))
        #expect(found.kind == .duplicateKey)
        #expect(found.path == "content.state")
        #expect(found.line == 2)
        #expect(found.column == 2)
        #expect("\(found)".contains("\"speed\" appears twice"))
    }

    @Test func escapedSpellingsOfOneFieldAreTheSameField() {
        #expect(failure(#"{"speed": 1, "sp\u0065ed": 2}"#)?.kind == .duplicateKey)
        #expect(failure(#"{"a\"b": 1, "a\u0022b": 2}"#)?.kind == .duplicateKey)
        #expect(failure(#"{"é": 1, "\u00e9": 2}"#)?.kind == .duplicateKey)
    }

    @Test func duplicatesAreFoundInObjectsWithManyFields() {
        let fields = (0..<40).map { "\"f\($0)\": \($0)" }.joined(separator: ", ")
        #expect(failure("{\(fields)}") == nil)
        #expect(failure("{\(fields), \"f3\": 0}")?.kind == .duplicateKey)
        // The same name in sibling objects is not a duplicate.
        #expect(failure(#"[{"a": 1}, {"a": 2}]"#) == nil)
    }

    @Test func nestingBeyondTheLimitIsRefused() {
        let deep = String(repeating: "[", count: JSONSyntax.maxDepth + 1) + String(repeating: "]", count: JSONSyntax.maxDepth + 1)
        #expect(failure(deep)?.kind == .tooDeep)
        let limit = String(repeating: "[", count: JSONSyntax.maxDepth) + String(repeating: "]", count: JSONSyntax.maxDepth)
        #expect(failure(limit) == nil)
        // A hundred thousand brackets are refused without recursing that deep.
        #expect(failure(String(repeating: "{\"a\":", count: 100_000))?.kind == .tooDeep)
    }

    @Test func numbersBeyondADoubleAreRefused() {
        #expect(failure(#"{"n": 1e400}"#)?.kind == .numberOutOfRange)
        #expect(failure(#"{"n": -1e309}"#)?.kind == .numberOutOfRange)
        #expect(failure(#"{"n": 1e-400}"#)?.kind == .numberOutOfRange)
        #expect(failure("[" + "9" + String(repeating: "0", count: 400) + "]")?.kind == .numberOutOfRange)
        #expect(failure(#"{"n": 0e-400}"#) == nil)
        #expect(failure(#"{"n": 1.7976931348623157e308}"#) == nil)
    }

    @Test func aPathNamesArrayElements() throws {
        let found = try #require(failure(#"{"items": [{"a": 1}, {"b": tru}]}"#))
        #expect(found.path == "items[1].b")
    }
}

extension JSONSyntaxTests {
    /// `parse` reads what Foundation's decoder reads as a `JSONValue`, in one pass: the same
    /// strings, and numbers classified as Foundation classifies them (whole and in an `Int64`'s
    /// range: `.integer`, even written `1.0` or `1e2`).
    @Test(arguments: [
        "0", "-0", "1.0", "1e2", "1E2", "1.5", "1.5e1", "2.5e-1", "0.0", "-0.0", "9223372036854775807", "9223372036854775808",
        "-9223372036854775808", "-9223372036854775809", "100000000000000000000", "12345678901234567890.0", "0.1e1", "1e-2",
        "1.00000000000000000001", "10e-1", "922337203685477580e1", "9223372036854775807e0", "1e18", "1e19", "0e5",
        "0.0000001e7", "1e-320", "123.456", "-1.0e0", "3.141592653589793",
        #""plain""#, #""esc \" \\ \/ \b \f \n \r \t""#, #""\u00e9\u4e2d\ud83d\ude00 é 中 😀""#, #""""#,
        "true", "false", "null", "[]", "{}", #"[1, "a", {"b": [null, true]}, -2.5]"#,
        #"{"a": {"b": {"c": 1e2}}, "d": [], "e": {}, "f": "\u0000"}"#, " \n\t{\"x\" : 1 } \n",
        "\u{FEFF}[1]",
    ])
    func parseReadsWhatFoundationReads(_ text: String) throws {
        let bytes = Array(text.utf8)
        let parsed = try bytes.withUnsafeBytes { buffer throws(JSONSyntax.Failure) in try JSONSyntax.parse(buffer) }
        let foundation = try JSONDecoder().decode(JSONValue.self, from: Data(bytes))
        #expect(parsed == foundation, "\(text)")
    }

    /// Beyond 2⁵³ a `Double` cannot tell neighbouring integers apart, and Foundation's decoder
    /// answers erratically (it truncates `123456789012345678.5` to a whole number); `parse` reads
    /// the digits: whole when they are, the `Double` nearest otherwise.
    @Test(arguments: [
        ("9007199254740993.0", JSONValue.integer(9_007_199_254_740_993)),
        ("9007199254740993e0", .integer(9_007_199_254_740_993)),
        ("-90071992547409930e-1", .integer(-9_007_199_254_740_993)),
        ("0.0000009007199254740993e22", .integer(9_007_199_254_740_993)),
        ("9.22337203685477e18", .integer(9_223_372_036_854_770_000)),
        ("9.223372036854775807e18", .number(0x1p63)),
        ("-9.223372036854775808e18", .number(-0x1p63)),
        ("9223372036854775.0808", .number(9_223_372_036_854_776)),
        ("123456789012345678.5", .number(123_456_789_012_345_680)),
        ("1.5e16", .integer(15_000_000_000_000_000)),
    ])
    func beyondTwoToThe53TheDigitsDecideWhatIsWhole(_ text: String, _ expected: JSONValue) throws {
        let bytes = Array(text.utf8)
        let parsed = try bytes.withUnsafeBytes { buffer throws(JSONSyntax.Failure) in try JSONSyntax.parse(buffer) }
        #expect(parsed == expected, "\(text)")
    }
}

@Suite("Request decoding")
struct RequestDecodingTests {
    private func decode<T: Decodable>(_ type: T.Type, _ text: String) throws(IsletError) -> T {
        try decodeRequest(type, text)
    }

    @Test func aDuplicateFieldIsInvalid() {
        let error = #expect(throws: IsletError.self) {
            try decode(ContentUpdate.self, #"{"content": {"state": {}}, "content": {"state": {"x": 1}}}"#)
        }
        #expect(error?.reason == .invalidRequest)
        #expect(error?.message.contains("\"content\" appears twice") == true)
    }

    @Test(arguments: ["1e21", "-1", "253402300800", "1e300"])
    func aDateOutsideTheRangeIsInvalidAndNamed(_ seconds: String) {
        let error = #expect(throws: IsletError.self) {
            try decode(ContentUpdate.self, #"{"content": {"state": {}, "staleDate": \#(seconds)}}"#)
        }
        #expect(error?.reason == .invalidRequest)
        #expect(error?.message.hasPrefix("content.staleDate:") == true)
    }

    @Test func aDateInsideTheRangeIsRead() throws {
        let update = try decode(ContentUpdate.self, #"{"content": {"state": {}}, "timestamp": 253402300799}"#)
        #expect(update.timestamp == Date(timeIntervalSince1970: 253_402_300_799))
    }

    @Test func malformedJSONSaysWhere() {
        let error = #expect(throws: IsletError.self) { try decode(ContentUpdate.self, "{\"content\": {\"state\": {}},\n}") }
        #expect(error?.reason == .malformedJSON)
        #expect(error?.message.contains("line 2, column 1") == true)
    }
}
