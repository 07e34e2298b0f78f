import IsletCore

/// An activity on the surfaces beyond the phone (docs/surfaces.md): each a frame of Apple's size
/// for it, drawn from the same fragments as the phone's, so a surface costs no render.
extension PresentationDocument {
    /// One activity as `surface` draws it, in `size` (the surface's default when `nil`): the
    /// watch's and CarPlay's card (`small`, or the compact pair), the Mac's menu bar item with its
    /// expanded popover, the iPad's Lock Screen card, StandBy's screen. The frame's width and
    /// height are written on it from `Surface.sizes`, the one place they are kept.
    public static func frame(_ presentation: Presentation, on surface: Surface, size: Surface.Size? = nil) -> String {
        let size = size ?? surface.sizes.first
        let keyline = presentation.keylineTint.map { "--keyline:\($0.dark)" }
        switch surface {
        case .lockScreen:
            return frame(presentation, .lockScreen)
        case .dynamicIsland:
            return frame(presentation, .compact)
        case .watch, .carplay:
            let (kind, content) =
                presentation.drawsSmall
                ? ("small", presentation.small)
                : ("fallback", "<div class=\"islet-slot islet-leading\">\(presentation.compactLeading)</div><div class=\"islet-slot islet-trailing\">\(presentation.compactTrailing)</div>")
            return """
                <section class="islet-surface islet-\(surface.rawValue) la-dark" data-surface="\(surface.rawValue)" data-size="\(size?.name ?? "")" data-small="\(kind)"\(style(size: size, keyline.map { [$0] } ?? []))><div class="islet-small islet-small-\(kind)">\(content)</div></section>
                """
        case .mac:
            return """
                <section class="islet-surface islet-mac" data-surface="mac"><div class="islet-menubar-item la-dark"\(style(size: nil, keyline.map { [$0] } ?? []))><div class="islet-slot islet-leading">\(presentation.compactLeading)</div><div class="islet-slot islet-trailing">\(presentation.compactTrailing)</div></div><div class="islet-mac-popover">\(frame(presentation, .expanded))</div></section>
                """
        case .ipad:
            return card(presentation, surface: "ipad", width: size?.width)
        case .standby:
            return """
                <section class="islet-surface islet-standby" data-surface="standby" data-size="\(size?.name ?? "")"\(style(size: size, []))><div class="islet-standby-top">\(frame(presentation, .minimal))</div><div class="islet-standby-full">\(card(presentation, surface: nil, width: nil))</div></section>
                """
        }
    }

    /// A page with `presentation` on `surface`, as `islet render --surface` writes it.
    public static func html(
        _ presentation: Presentation, on surface: Surface, size: Surface.Size?, appearance: Appearance, title: String
    ) -> String {
        page(
            body: "<main class=\"islet-scene islet-scene-\(surface.rawValue)\">\n\(frame(presentation, on: surface, size: size))\n</main>",
            dark: appearance == .dark || !surface.hasLightAppearance, title: title
        )
    }

    /// Room for `surface`'s page in points: its frame in `size` with the scene's margins.
    public static func pageSize(of surface: Surface, size: Surface.Size?) -> (width: Int, height: Int) {
        let size = size ?? surface.sizes.first
        let margin = 2 * sceneMargin
        switch surface {
        case .lockScreen, .dynamicIsland: return (393, 178 + margin)
        case .watch, .carplay, .standby:
            return (Int((size?.width ?? 0).rounded(.up)) + margin, Int((size?.height ?? 0).rounded(.up)) + margin)
        case .ipad: return (Int((size?.width ?? 500).rounded(.up)) + margin, 160 + margin)
        // The menu bar, and the expanded view open under it.
        case .mac: return (371 + margin, 4 + 37 + 8 + 160 + margin)
        }
    }

    /// The space around a surface's frame on its page, in points (`.islet-scene`'s padding).
    static let sceneMargin = 16

    /// The Lock Screen card, at `width` (the iPhone's 361 when `nil`).
    static func card(_ presentation: Presentation, surface: String?, width: Double?) -> String {
        var style: [String] = []
        if let tint = presentation.backgroundTint { style += ["--card-l:\(tint.light)", "--card-d:\(tint.dark)"] }
        if let width { style.append("width:\(css(width))px") }
        let styleAttribute = style.isEmpty ? "" : " style=\"\(style.joined(separator: ";"))\""
        let surfaceAttribute = surface.map { " data-surface=\"\($0)\"" } ?? ""
        return "<section class=\"islet-card\(presentation.isStale ? " islet-stale" : "")\"\(styleAttribute) data-kind=\"lockScreen\"\(surfaceAttribute)>\(presentation.lockScreen)</section>"
    }

    private static func style(size: Surface.Size?, _ more: [String]) -> String {
        var declarations: [String] = []
        if let size {
            declarations.append("width:\(css(size.width))px")
            if let height = size.height { declarations.append("height:\(css(height))px") }
        }
        declarations += more
        return declarations.isEmpty ? "" : " style=\"\(declarations.joined(separator: ";"))\""
    }

    private static func css(_ number: Double) -> String {
        number.rounded() == number ? String(Int(number)) : String(number)
    }
}
