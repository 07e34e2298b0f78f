import IsletCore

/// A layout color as CSS, for light and for dark appearance. System colors are CSS variables
/// the stylesheet defines per appearance (`var(--la-blue)`), so they adapt as iOS's do.
extension CSSColor {
    init(_ color: LayoutColor) {
        switch color {
        case .system(let name):
            let value = "var(--la-\(name.rawValue))"
            self.init(light: value, dark: value)
        case .rgba(let red, let green, let blue, let alpha):
            let value = alpha == 255 ? "rgb(\(red),\(green),\(blue))" : "rgba(\(red),\(green),\(blue),\(Self.fraction(alpha)))"
            self.init(light: value, dark: value)
        case .adaptive(let lightColor, let darkColor):
            self.init(light: CSSColor(lightColor).light, dark: CSSColor(darkColor).dark)
        }
    }

    private static func fraction(_ alpha: UInt8) -> String {
        let value = (Double(alpha) / 255 * 1000).rounded() / 1000
        return String(value)
    }

    /// Declarations setting `property` for both appearances, through a pair of custom
    /// properties the stylesheet picks from: `--fg-l:…;--fg-d:…`.
    func declarations(_ property: String) -> String {
        "--\(property)-l:\(light);--\(property)-d:\(dark)"
    }
}
