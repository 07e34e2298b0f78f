/// One activity's presentations as HTML fragments, with the colors that style their containers:
/// what `GET /v1/activities/{id}/presentation` answers, drawn by IsletRender.
///
/// The Lock Screen card's background and the island's outline are the display's to draw, so
/// they come as colors rather than markup. An empty string is a region the layout leaves empty.
public struct Presentation: Hashable, Sendable, Codable {
    public var lockScreen: String
    public var expandedLeading: String
    public var expandedTrailing: String
    public var expandedCenter: String
    public var expandedBottom: String
    public var compactLeading: String
    public var compactTrailing: String
    public var minimal: String
    /// The `small` region: the Apple Watch's and CarPlay's view when `drawsSmall`.
    public var small: String
    /// Whether the watch and CarPlay draw `small` (the layout has one and declares
    /// `supplementalFamilies` small); otherwise they draw the compact leading and trailing views
    /// side by side, as iOS does (`Layout.drawsSmall`).
    public var drawsSmall: Bool
    /// `activityBackgroundTint`, for light and dark.
    public var backgroundTint: CSSColor?
    /// `activitySystemActionForegroundColor`, for light and dark.
    public var systemActionForegroundColor: CSSColor?
    /// `DynamicIsland.keylineTint`, for light and dark.
    public var keylineTint: CSSColor?
    /// Whether the content was stale when drawn.
    public var isStale: Bool
    /// The bindings that found nothing their views could draw: a content state that does not
    /// fit the layout. Empty when every value was there.
    public var warnings: [LayoutWarning]

    /// Creates a presentation.
    public init(
        lockScreen: String, expandedLeading: String, expandedTrailing: String, expandedCenter: String, expandedBottom: String,
        compactLeading: String, compactTrailing: String, minimal: String, small: String = "", drawsSmall: Bool = false,
        backgroundTint: CSSColor?,
        systemActionForegroundColor: CSSColor?, keylineTint: CSSColor?, isStale: Bool, warnings: [LayoutWarning] = []
    ) {
        self.lockScreen = lockScreen
        self.expandedLeading = expandedLeading
        self.expandedTrailing = expandedTrailing
        self.expandedCenter = expandedCenter
        self.expandedBottom = expandedBottom
        self.compactLeading = compactLeading
        self.compactTrailing = compactTrailing
        self.minimal = minimal
        self.small = small
        self.drawsSmall = drawsSmall
        self.backgroundTint = backgroundTint
        self.systemActionForegroundColor = systemActionForegroundColor
        self.keylineTint = keylineTint
        self.isStale = isStale
        self.warnings = warnings
    }
}

/// A color as CSS, for light and for dark appearance.
public struct CSSColor: Hashable, Sendable, Codable {
    public var light: String
    public var dark: String

    public init(light: String, dark: String) {
        self.light = light
        self.dark = dark
    }
}
