import Foundation

/// Islet's own SVG icons, named after the SF Symbols Live Activities use most (see
/// `Icons/README.md`). They are drawn in `currentColor`, so they take the text's color, and
/// sized by the font, as symbols are.
public struct IconSet: Sendable {
    private let icons: [String: String]

    /// The icons built into Islet.
    public static let builtIn = IconSet(
        icons: Dictionary(
            uniqueKeysWithValues: EmbeddedFiles.files.compactMap { name, svg in
                name.hasSuffix(".svg") ? (String(name.dropLast(4)), svg.trimmingCharacters(in: .whitespacesAndNewlines)) : nil
            }
        )
    )

    init(icons: [String: String]) {
        self.icons = icons
    }

    /// Every icon's name, sorted.
    public var names: [String] { icons.keys.filter { $0 != "placeholder" }.sorted() }

    /// The icon called `name`, if there is one.
    public func svg(named name: String) -> String? { name == "placeholder" ? nil : icons[name] }

    /// What an unknown name draws: a neutral outline, never an error.
    public var placeholder: String {
        icons["placeholder"] ?? #"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"></svg>"#
    }
}
