/// A binding that found nothing its view could draw, noted while a presentation was drawn.
///
/// A content state that does not fit its type's layout still draws (a missing value as
/// nothing, a string where a number belongs as the string), as a device shows what it can; but
/// never silently. Each presentation carries its warnings: the API returns them, the console
/// shows them on the activity's timeline and `islet render` prints them. A binding the layout
/// expects may find nothing is not one (`BindingReader` says which). One warning is about the
/// layout itself rather than a binding: a `small` region it does not declare (`smallNotDeclared`).
public struct LayoutWarning: Hashable, Sendable, Codable {
    /// What was wrong with the value, a closed set a program can switch on.
    public enum Problem: String, CaseIterable, Hashable, Sendable, Codable {
        /// Nothing there (no such field, an index past the end), or null.
        case missing
        /// A value, but not the number a format, a progress view or a comparison needs.
        case notANumber
        /// A value, but not a date: a number in the layout's `dateEncoding`, within the dates
        /// Islet draws.
        case notADate
        /// A `small` region in a layout whose `supplementalFamilies` lacks `small`: iOS draws
        /// the compact views on the watch and in CarPlay instead, and so does Islet.
        case smallNotDeclared
    }

    /// The region being drawn.
    public var region: Layout.Region
    /// Where the binding is in the layout document, such as `lockScreen.children[1].text[2]`.
    public var path: String
    /// What it reads, such as `state.progress`; empty for a warning about the layout itself.
    public var binding: String
    public var problem: Problem
    /// The warning in words, for a person: `state.progress is missing`.
    public var message: String

    /// The warning for a `small` region the layout does not declare (`Layout.drawsSmall`).
    public static let smallNotDeclared = LayoutWarning(
        region: .small, path: "small", binding: "", problem: .smallNotDeclared,
        message: "small is drawn only when supplementalFamilies has small; the watch and CarPlay draw the compact views instead"
    )

    private init(region: Layout.Region, path: String, binding: String, problem: Problem, message: String) {
        self.region = region
        self.path = path
        self.binding = binding
        self.problem = problem
        self.message = message
    }

    /// A warning, with its words.
    /// - Parameters:
    ///   - found: The value the binding found (nil or null when it found none), described in
    ///     the words by its kind, never its text, so no payload's text reaches a message.
    ///   - dateEncoding: How the layout reads numbers as dates, said when a date is wrong.
    public init(
        region: Layout.Region, path: String, binding: BindingPath, problem: Problem, found: JSONValue?, dateEncoding: DateEncoding
    ) {
        self.region = region
        self.path = path
        self.binding = binding.description
        self.problem = problem
        let dates = "a date is a number of \(dateEncoding.words) (the layout's dateEncoding)"
        switch (problem, found) {
        case (.missing, .null?): message = "\(binding) is null"
        case (.missing, _): message = "\(binding) is missing"
        case (.notANumber, let value): message = "\(binding) is \(value.kindWords), not a number"
        case (.notADate, let value?) where value.numberValue != nil:
            message = "\(binding) is a number outside the dates Islet draws; \(dates)"
        case (.notADate, let value): message = "\(binding) is \(value.kindWords), not a date; \(dates)"
        case (.smallNotDeclared, _): message = Self.smallNotDeclared.message
        }
    }
}

extension DateEncoding {
    /// What the numbers count, in words.
    var words: String {
        switch self {
        case .secondsSince2001: "seconds since 2001-01-01"
        case .secondsSince1970: "seconds since 1970-01-01"
        case .millisecondsSince1970: "milliseconds since 1970-01-01"
        }
    }
}

extension Optional where Wrapped == JSONValue {
    /// "a string", "an object": a value's kind, as a warning says it.
    fileprivate var kindWords: String {
        switch self {
        case nil, .null?: "null"
        case .bool?: "true or false"
        case .integer?, .number?: "a number"
        case .string?: "a string"
        case .array?: "an array"
        case .object?: "an object"
        }
    }
}
