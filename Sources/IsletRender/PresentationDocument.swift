import IsletCore

/// A self-contained HTML page showing presentations in their system frames: what
/// `islet render` writes, and what its PNGs are screenshots of.
public enum PresentationDocument {
    /// The presentations iOS shows an activity in.
    public enum Kind: String, CaseIterable, Sendable {
        case lockScreen, compact, minimal, expanded
    }

    public enum Appearance: String, CaseIterable, Sendable {
        case light, dark
    }

    /// A page with each of `kinds` for `presentation`, on a Lock Screen-like background.
    public static func html(_ presentation: Presentation, kinds: [Kind], appearance: Appearance, title: String) -> String {
        let body = kinds.map { frame(presentation, $0) }.joined(separator: "\n")
        return page(body: "<main class=\"islet-sheet\">\n\(body)\n</main>", dark: appearance == .dark, title: title)
    }

    /// A self-contained page around `body`: the renderer's stylesheets and script, the wallpaper.
    static func page(body: String, dark: Bool, title: String) -> String {
        """
        <!DOCTYPE html>
        <html lang="en"><head><meta charset="utf-8"><title>\(HTML.escape(title))</title>
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <style>
        \(Renderer.stylesheet)
        \(Renderer.chromeStylesheet)
        body { margin: 0; min-height: 100vh; }
        .islet-sheet { display: flex; flex-direction: column; align-items: center; gap: 18px; padding: 16px; width: 393px; box-sizing: border-box; }
        </style></head>
        <body class="la-content islet-wallpaper\(dark ? " la-dark" : "")">
        \(body)
        <script>\(Renderer.script)
        IsletPresentation.refresh(document.body); setInterval(function () { IsletPresentation.refresh(document.body); }, 1000);</script>
        </body></html>
        """
    }

    /// One presentation in its frame: the card, or the island in one of its modes.
    public static func frame(_ presentation: Presentation, _ kind: Kind) -> String {
        let keyline = presentation.keylineTint.map { " style=\"--keyline:\($0.dark)\"" } ?? ""
        switch kind {
        case .lockScreen:
            return card(presentation, surface: nil, width: nil)
        case .compact:
            return """
                <section class="islet-island islet-compact la-dark"\(keyline) data-kind="compact"><div class="islet-slot islet-leading">\(presentation.compactLeading)</div><div class="islet-camera"></div><div class="islet-slot islet-trailing">\(presentation.compactTrailing)</div></section>
                """
        case .minimal:
            return """
                <section class="islet-minimal-pair la-dark" data-kind="minimal"><div class="islet-bubble"\(keyline)>\(presentation.minimal)</div></section>
                """
        case .expanded:
            return """
                <section class="islet-island islet-expanded la-dark"\(keyline) data-kind="expanded"><div class="islet-top"><div class="islet-slot islet-leading">\(presentation.expandedLeading)</div><div class="islet-slot islet-center">\(presentation.expandedCenter)</div><div class="islet-slot islet-trailing">\(presentation.expandedTrailing)</div></div><div class="islet-slot islet-bottom">\(presentation.expandedBottom)</div></section>
                """
        }
    }
}
