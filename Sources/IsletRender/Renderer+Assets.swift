extension Renderer {
    /// The CSS for rendered presentations (`.la-*` classes, system colors per appearance).
    public static var stylesheet: String { EmbeddedFiles.files["presentation.css"] ?? "" }

    /// The script that keeps timers, relative dates and timed progress current in a page:
    /// `IsletPresentation.refresh(root)`, once a second.
    public static var script: String { EmbeddedFiles.files["presentation.js"] ?? "" }
}

extension Renderer {
    /// The CSS for the system's frames: the Lock Screen card and the Dynamic Island's modes.
    public static var chromeStylesheet: String { EmbeddedFiles.files["chrome.css"] ?? "" }
}
