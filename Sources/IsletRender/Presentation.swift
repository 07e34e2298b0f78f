/// One activity's presentations as HTML fragments, with the colors that style their containers.
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
    /// `activityBackgroundTint`, for light and dark.
    public var backgroundTint: CSSColor?
    /// `activitySystemActionForegroundColor`, for light and dark.
    public var systemActionForegroundColor: CSSColor?
    /// `DynamicIsland.keylineTint`, for light and dark.
    public var keylineTint: CSSColor?
    /// Whether the content was stale when drawn.
    public var isStale: Bool
}
