import Foundation

/// A layout as registered for an app's activity type: the document as sent, and its revision.
public struct LayoutRecord: Codable, Hashable, Sendable {
    /// The app.
    public var bundleId: BundleID
    /// The activity type it draws.
    public var attributesType: String
    /// The layout document, as registered.
    public var layout: JSONValue
    /// Counts replacements from 1, so a display can tell a presentation drawn from an older layout.
    public var revision: Int
    /// When it was registered or last replaced.
    public var updatedAt: Date

    /// Creates a record.
    public init(bundleId: BundleID, attributesType: String, layout: JSONValue, revision: Int, updatedAt: Date) {
        self.bundleId = bundleId
        self.attributesType = attributesType
        self.layout = layout
        self.revision = revision
        self.updatedAt = updatedAt
    }
}

/// An activity's layout was registered, replaced or removed: displays draw it again.
public struct LayoutChange: Codable, Hashable, Sendable {
    /// The activity type whose layout changed.
    public var attributesType: String
    /// The new revision; 0 when the layout was removed and the default card draws the type.
    public var revision: Int

    /// Creates a layout change.
    public init(attributesType: String, revision: Int) {
        self.attributesType = attributesType
        self.revision = revision
    }
}
