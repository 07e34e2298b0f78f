import Foundation
import IsletCore

/// iOS's system colors for each appearance, read from the stylesheet's own definitions (its
/// `:root, .la-light` and `.la-dark` blocks), so there is one table: what a presentation's color
/// fields carry for pages that have not loaded Islet's stylesheet.
enum SystemPalette {
    /// The value of each `--la-…` color, by name (`blue`), in light and in dark appearance.
    static let light: [String: String] = colors(in: block(after: ":root, .la-light {"))
    static let dark: [String: String] = light.merging(colors(in: block(after: ".la-dark {"))) { $1 }

    /// The text of the rule block that starts with `head` in the stylesheet.
    private static func block(after head: String) -> Substring {
        let stylesheet = Renderer.stylesheet
        guard let start = stylesheet.range(of: head)?.upperBound, let end = stylesheet[start...].firstIndex(of: "}") else { return "" }
        return stylesheet[start..<end]
    }

    /// `--la-name: value;` declarations, with `var(--la-other)` values resolved within the block.
    private static func colors(in block: Substring) -> [String: String] {
        var colors: [String: String] = [:]
        for declaration in block.split(separator: ";") {
            let parts = declaration.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
            guard parts.count == 2, parts[0].hasPrefix("--la-") else { continue }
            colors[String(parts[0].dropFirst(5))] = parts[1]
        }
        for (name, value) in colors where value.hasPrefix("var(--la-") {
            colors[name] = colors[String(value.dropFirst(9).dropLast())] ?? value
        }
        return colors
    }
}

extension CSSColor {
    /// The color with system colors as their values for each appearance (`#007aff` in light,
    /// `#0a84ff` in dark for blue) rather than the stylesheet's variables: for the colors a
    /// presentation hands to whoever draws its container.
    public init(resolving color: LayoutColor) {
        switch color {
        case .system(let name):
            let css = CSSColor(color)
            self.init(light: SystemPalette.light[name.rawValue] ?? css.light, dark: SystemPalette.dark[name.rawValue] ?? css.dark)
        case .rgba:
            self.init(color)
        case .adaptive(let light, let dark):
            self.init(light: CSSColor(resolving: light).light, dark: CSSColor(resolving: dark).dark)
        }
    }
}
