import Foundation
import IsletCore
import Testing

/// A shape is stored in its compact JSON form and read back for every later update: whatever a
/// registration was accepted as must read back as the same shape, or the app's activities could
/// no longer be updated, ended or dismissed.
@Suite("Shapes")
struct ShapeTests {
    func readBack(_ shape: Shape) throws -> Shape {
        let stored = try JSONEncoder().encode(shape)
        return try JSONDecoder().decode(Shape.self, from: stored)
    }

    @Test(arguments: [
        #""string""#, #""number?""#, #"["date?"]"#, #"{"enum": ["a", "b"]}"#, #"{"optional": {"enum": ["a"]}}"#,
        #"{"optional": "string?"}"#, #"{"optional": {"optional": "number"}}"#, #"{"x": {"optional": "string?"}}"#,
        #"{"x": [{"optional": {"y": "integer??"}}], "z": "any"}"#, #"{"optional": ["boolean?"]}"#,
    ])
    func everyAcceptedShapeReadsBackAsItself(_ text: String) throws {
        let shape = try JSONDecoder().decode(Shape.self, from: Data(text.utf8))
        #expect(try readBack(shape) == shape)
        #expect(try readBack(readBack(shape)) == shape)
    }

    @Test func anOptionalOptionalIsJustOptional() throws {
        let nested = try JSONDecoder().decode(Shape.self, from: Data(#"{"optional": "string?"}"#.utf8))
        #expect(nested == .optional(.string))
        // The form an earlier version stored for it reads back too.
        #expect(try Shape.parse("string??") == .optional(.string))
        #expect(try Shape.parse(["x": "number???"]) == .object(["x": .optional(.number)]))
        #expect(throws: IsletError.self) { try Shape.parse("?") }
        #expect(throws: IsletError.self) { try Shape.parse("str?ing") }
    }

    @Test func aStoredTypeWithANestedOptionalStillChecksUpdates() throws {
        let type = try JSONDecoder().decode(
            ActivityType.self,
            from: Data(#"{"bundleId": "com.example.a", "name": "T", "contentState": {"x": {"optional": "string?"}}}"#.utf8)
        )
        let stored = try JSONDecoder().decode(ActivityType.self, from: JSONEncoder().encode(type))
        #expect(stored == type)
        #expect(stored.contentState?.mismatch(in: ["x": nil], at: "content-state") == nil)
        #expect(stored.contentState?.mismatch(in: ["x": 3], at: "content-state")?.path == "content-state.x")
    }
}
