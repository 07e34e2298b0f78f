import Foundation
import IsletClient
import IsletCore

/// A region of the expanded Dynamic Island.
public struct DynamicIslandExpandedRegion: Sendable {
    public enum Position: String, Sendable { case leading, trailing, center, bottom }
    let position: Position
    let node: LayoutNode

    public init(_ position: Position, @LayoutBuilder content: () -> [LayoutNode]) {
        self.position = position
        node = single(content())
    }
}

@resultBuilder
public enum DynamicIslandExpandedContentBuilder {
    public static func buildBlock(_ regions: DynamicIslandExpandedRegion...) -> [DynamicIslandExpandedRegion] { regions }
}

/// The Dynamic Island's presentations: expanded regions, compact leading and trailing, minimal.
public struct DynamicIsland: Sendable {
    let expanded: [DynamicIslandExpandedRegion]
    let compactLeading: LayoutNode
    let compactTrailing: LayoutNode
    let minimal: LayoutNode
    var keyline: Color?

    public init(
        @DynamicIslandExpandedContentBuilder expanded: () -> [DynamicIslandExpandedRegion],
        @LayoutBuilder compactLeading: () -> [LayoutNode], @LayoutBuilder compactTrailing: () -> [LayoutNode],
        @LayoutBuilder minimal: () -> [LayoutNode]
    ) {
        self.expanded = expanded()
        self.compactLeading = single(compactLeading())
        self.compactTrailing = single(compactTrailing())
        self.minimal = single(minimal())
    }

    /// The island's outline color.
    public func keylineTint(_ color: Color) -> DynamicIsland {
        var copy = self
        copy.keyline = color
        return copy
    }

    func json() throws -> JSONValue {
        var expandedRegions: [String: JSONValue] = [:]
        for region in expanded { expandedRegions[region.position.rawValue] = try region.node.json() }
        var island: [String: JSONValue] = [
            "expanded": .object(expandedRegions), "compactLeading": try compactLeading.json(),
            "compactTrailing": try compactTrailing.json(), "minimal": try minimal.json(),
        ]
        if let keyline { island["keylineTint"] = keyline.json }
        return .object(island)
    }
}

/// An activity type's presentations, as a widget extension's `ActivityConfiguration` declares
/// them; `document()` is the layout document, `register(bundleId:)` sends it to the server.
public struct ActivityConfiguration<Attributes: ActivityAttributes>: Sendable {
    private let lockScreen: LayoutNode
    private let dynamicIsland: DynamicIsland
    private var small: LayoutNode?
    private var families: [ActivityFamily] = []

    public init(
        for attributesType: Attributes.Type = Attributes.self,
        @LayoutBuilder content: (ActivityViewContext<Attributes>) -> [LayoutNode],
        dynamicIsland: (ActivityViewContext<Attributes>) -> DynamicIsland
    ) {
        lockScreen = single(content(ActivityViewContext()))
        self.dynamicIsland = dynamicIsland(ActivityViewContext())
    }

    /// The view of the `.small` family, drawn on the Apple Watch and in CarPlay when the
    /// configuration declares `.small` (SwiftUI reads `@Environment(\.activityFamily)` in the
    /// one content closure; a layout document gives the family a region of its own).
    public func small(@LayoutBuilder _ content: (ActivityViewContext<Attributes>) -> [LayoutNode]) -> ActivityConfiguration {
        var copy = self
        copy.small = single(content(ActivityViewContext()))
        return copy
    }

    /// The families beyond the Lock Screen the widget is drawn in, as WidgetKit's
    /// `supplementalActivityFamilies(_:)`: without `.small` the watch and CarPlay draw the
    /// compact views.
    public func supplementalActivityFamilies(_ families: [ActivityFamily]) -> ActivityConfiguration {
        var copy = self
        copy.families = families
        return copy
    }

    /// The layout document; throws when a binding cannot be named.
    public func document() throws -> JSONValue {
        var document: [String: JSONValue] = [
            "lockScreen": try lockScreen.json(), "dynamicIsland": try dynamicIsland.json(), "dateEncoding": "secondsSince2001",
        ]
        if let small { document["small"] = try small.json() }
        if !families.isEmpty { document["supplementalFamilies"] = .array(families.map { .string($0.rawValue) }) }
        return .object(document)
    }

    /// Registers the layout for `Attributes` with the connection's server, for the connection's
    /// app (or `bundleId`).
    public func register(bundleId: String? = nil) async throws {
        let connection = IsletConnection.shared
        let app: String
        if let bundleId = bundleId ?? connection.app {
            app = bundleId
        } else {
            guard let own = try await connection.client.apps().first?.bundleId else {
                throw LayoutDSLError("The key belongs to no app: name the app with register(bundleId:).")
            }
            app = own
        }
        _ = try await connection.client.putLayout(bundleId: app, attributesType: Attributes.attributesTypeName, try document())
    }
}
