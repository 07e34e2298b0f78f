/// A color in a layout, as SwiftUI names them.
///
/// Written as a system color's name (`"blue"`, `"secondary"`), a hex string (`"#FF9500"`,
/// `"#FF950080"` with alpha), or `{"light": …, "dark": …}` for a color that differs by
/// appearance. System colors adapt to light and dark by themselves, as in iOS.
public indirect enum LayoutColor: Hashable, Sendable {
    case system(SystemColor)
    /// Red, green, blue and alpha, each 0…255.
    case rgba(UInt8, UInt8, UInt8, UInt8)
    case adaptive(light: LayoutColor, dark: LayoutColor)

    /// SwiftUI's named colors.
    public enum SystemColor: String, CaseIterable, Sendable {
        case red, orange, yellow, green, mint, teal, cyan, blue, indigo, purple, pink, brown, gray
        case white, black, clear, primary, secondary, accentColor
    }

    static func parse(_ value: JSONValue, at path: String) throws(IsletError) -> LayoutColor {
        switch value {
        case .string(let text) where text.hasPrefix("#"):
            guard let color = rgba(hex: text.dropFirst()) else {
                throw LayoutReader.error(at: path, "\"\(text)\" is not a color; use #RGB, #RRGGBB or #RRGGBBAA")
            }
            return color
        case .string:
            return .system(try LayoutReader.choice(value, at: path, SystemColor.self))
        case .object:
            var reader = try LayoutReader(value, at: path, expecting: "a color")
            let light = try reader.required("light", "a color")
            let dark = try reader.required("dark", "a color")
            try reader.finish()
            return .adaptive(light: try parse(light, at: reader.place("light")), dark: try parse(dark, at: reader.place("dark")))
        default:
            throw LayoutReader.error(at: path, "expected a color (a name, #RRGGBB, or {\"light\", \"dark\"}), got \(value.typeName)")
        }
    }

    private static func rgba(hex: Substring) -> LayoutColor? {
        guard hex.allSatisfy(\.isHexDigit) else { return nil }
        let digits: [Substring]
        switch hex.count {
        case 3: digits = hex.map { Substring(String(repeating: $0, count: 2)) } + ["ff"]
        case 6: digits = [hex.prefix(2), hex.dropFirst(2).prefix(2), hex.dropFirst(4), "ff"]
        case 8: digits = [hex.prefix(2), hex.dropFirst(2).prefix(2), hex.dropFirst(4).prefix(2), hex.dropFirst(6)]
        default: return nil
        }
        let bytes = digits.compactMap { UInt8($0, radix: 16) }
        return bytes.count == 4 ? .rgba(bytes[0], bytes[1], bytes[2], bytes[3]) : nil
    }
}
