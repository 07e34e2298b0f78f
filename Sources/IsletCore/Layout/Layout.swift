/// How an activity type is drawn: a view tree per presentation, as a widget extension's
/// `ActivityConfiguration` gives them in iOS.
///
/// ```json
/// {
///   "lockScreen": {"type": "VStack", "children": [...]},
///   "dynamicIsland": {
///     "expanded": {"leading": …, "trailing": …, "center": …, "bottom": …},
///     "compactLeading": …, "compactTrailing": …, "minimal": …,
///     "keylineTint": "cyan"
///   },
///   "small": {"type": "HStack", "children": [...]},
///   "supplementalFamilies": ["small"],
///   "dateEncoding": "secondsSince2001"
/// }
/// ```
///
/// Every region is optional; a missing one draws nothing, as an empty SwiftUI closure does.
/// `Layout.parse` refuses anything it cannot draw, naming the path to the bad node.
public struct Layout: Hashable, Sendable {
    public var lockScreen: LayoutView?
    public var expandedLeading: LayoutView?
    public var expandedTrailing: LayoutView?
    public var expandedCenter: LayoutView?
    public var expandedBottom: LayoutView?
    public var compactLeading: LayoutView?
    public var compactTrailing: LayoutView?
    public var minimal: LayoutView?
    /// The `.small` family's view: what the Apple Watch's Smart Stack and CarPlay draw when
    /// `supplementalFamilies` has `.small` (otherwise they draw the compact pair, `Surface`).
    public var small: LayoutView?
    /// The families the widget declares with `supplementalActivityFamilies(...)`; the Lock
    /// Screen's `.medium` alone when the document names none.
    public var supplementalFamilies: Set<ActivityFamily>
    /// The Dynamic Island's outline color (`DynamicIsland.keylineTint`).
    public var keylineTint: LayoutColor?
    /// The Android notification (`android`): a Live Update's title, texts and progress bar.
    public var android: AndroidLayout?
    /// How numbers read as dates count time.
    public var dateEncoding: DateEncoding

    public init(
        lockScreen: LayoutView? = nil, expandedLeading: LayoutView? = nil, expandedTrailing: LayoutView? = nil,
        expandedCenter: LayoutView? = nil, expandedBottom: LayoutView? = nil, compactLeading: LayoutView? = nil,
        compactTrailing: LayoutView? = nil, minimal: LayoutView? = nil, small: LayoutView? = nil,
        supplementalFamilies: Set<ActivityFamily> = [], keylineTint: LayoutColor? = nil, android: AndroidLayout? = nil,
        dateEncoding: DateEncoding = .secondsSince2001
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
        self.supplementalFamilies = supplementalFamilies
        self.keylineTint = keylineTint
        self.android = android
        self.dateEncoding = dateEncoding
    }

    /// The most views in one layout, all regions together.
    public static let maximumViews = 400
    /// The largest layout document, in bytes of JSON.
    public static let maximumSize = 65_536

    /// Reads a layout document, refusing what cannot be drawn with an `invalidLayout` error
    /// whose message starts with the path to the bad node.
    public static func parse(_ document: JSONValue) throws(IsletError) -> Layout {
        var reader = try LayoutReader(document, at: "", expecting: "a layout")
        var count = 0
        func view(_ value: JSONValue?, at path: String) throws(IsletError) -> LayoutView? {
            guard let value else { return nil }
            return try LayoutView.parse(value, at: path, count: &count)
        }
        var layout = Layout()
        layout.dateEncoding = try reader.choice("dateEncoding", DateEncoding.self) ?? .secondsSince2001
        layout.lockScreen = try view(reader.value("lockScreen"), at: "lockScreen")
        if let island = reader.value("dynamicIsland") {
            var reader = try LayoutReader(island, at: "dynamicIsland", expecting: "the Dynamic Island's regions")
            if let expanded = reader.value("expanded") {
                var regions = try LayoutReader(expanded, at: reader.place("expanded"), expecting: "the expanded regions")
                layout.expandedLeading = try view(regions.value("leading"), at: regions.place("leading"))
                layout.expandedTrailing = try view(regions.value("trailing"), at: regions.place("trailing"))
                layout.expandedCenter = try view(regions.value("center"), at: regions.place("center"))
                layout.expandedBottom = try view(regions.value("bottom"), at: regions.place("bottom"))
                try regions.finish()
            }
            layout.compactLeading = try view(reader.value("compactLeading"), at: reader.place("compactLeading"))
            layout.compactTrailing = try view(reader.value("compactTrailing"), at: reader.place("compactTrailing"))
            layout.minimal = try view(reader.value("minimal"), at: reader.place("minimal"))
            layout.keylineTint = try reader.value("keylineTint").map { value throws(IsletError) in
                try LayoutColor.parse(value, at: reader.place("keylineTint"))
            }
            try reader.finish()
        }
        layout.small = try view(reader.value("small"), at: "small")
        if let families = try reader.array("supplementalFamilies") {
            // ["small"], ["medium"] or both, as `supplementalActivityFamilies(...)` takes them.
            guard !families.isEmpty else { throw LayoutReader.error(at: "supplementalFamilies", "name small, medium or both") }
            for (index, value) in families.enumerated() {
                let family = try LayoutReader.choice(value, at: "supplementalFamilies[\(index)]", ActivityFamily.self)
                guard layout.supplementalFamilies.insert(family).inserted else {
                    throw LayoutReader.error(at: "supplementalFamilies[\(index)]", "\(family.rawValue) is named twice")
                }
            }
        }
        layout.android = try reader.value("android").map { value throws(IsletError) in try AndroidLayout.parse(value, at: "android") }
        try reader.finish()
        try layout.checkCardModifiers()
        return layout
    }

    /// One of the places iOS shows an activity in, by the name a `Presentation` gives its HTML.
    public enum Region: String, CaseIterable, Codable, Hashable, Sendable {
        case lockScreen, expandedLeading, expandedTrailing, expandedCenter, expandedBottom, compactLeading, compactTrailing, minimal,
            small

        /// Where the region's view is in a layout document: `dynamicIsland.expanded.leading`.
        public var path: String {
            switch self {
            case .lockScreen: "lockScreen"
            case .expandedLeading: "dynamicIsland.expanded.leading"
            case .expandedTrailing: "dynamicIsland.expanded.trailing"
            case .expandedCenter: "dynamicIsland.expanded.center"
            case .expandedBottom: "dynamicIsland.expanded.bottom"
            case .compactLeading: "dynamicIsland.compactLeading"
            case .compactTrailing: "dynamicIsland.compactTrailing"
            case .minimal: "dynamicIsland.minimal"
            case .small: "small"
            }
        }
    }

    /// The view the layout gives `region`, if any.
    public subscript(region: Region) -> LayoutView? {
        switch region {
        case .lockScreen: lockScreen
        case .expandedLeading: expandedLeading
        case .expandedTrailing: expandedTrailing
        case .expandedCenter: expandedCenter
        case .expandedBottom: expandedBottom
        case .compactLeading: compactLeading
        case .compactTrailing: compactTrailing
        case .minimal: minimal
        case .small: small
        }
    }

    /// Whether the watch and CarPlay draw the `small` region: only when the layout has one and
    /// declares `.small`, as iOS draws the `.small` family only for a widget that opts in. The
    /// one place this is decided; `Surface` says which surfaces draw it.
    public var drawsSmall: Bool { small != nil && supplementalFamilies.contains(.small) }

    /// The regions with their paths, in document order.
    public var regions: [(path: String, view: LayoutView)] {
        Region.allCases.compactMap { region in self[region].map { (region.path, $0) } }
    }

    /// `activityBackgroundTint` and `activitySystemActionForegroundColor` style the Lock Screen
    /// card, so they belong on the Lock Screen view's root and nowhere else.
    private func checkCardModifiers() throws(IsletError) {
        for (path, root) in regions {
            var stack: [(String, LayoutView, Bool)] = [(path, root, path == "lockScreen")]
            while let (place, view, isCardRoot) = stack.popLast() {
                if !isCardRoot, let index = view.modifiers.firstIndex(where: \.isCardModifier) {
                    throw LayoutReader.error(
                        at: "\(place).modifiers[\(index)]", "this modifier styles the Lock Screen card; put it on lockScreen's root view"
                    )
                }
                stack += view.children.map { ("\(place).\($0.path)", $0.view, false) }
            }
        }
    }
}

extension LayoutView {
    /// The views directly inside this one, with their paths relative to it.
    public var children: [(path: String, view: LayoutView)] {
        switch content {
        case .stack(let stack): stack.children.enumerated().map { ("children[\($0.offset)]", $0.element) }
        case .conditional(_, let then, let otherwise): [("then", then)] + (otherwise.map { [("else", $0)] } ?? [])
        case .text, .image, .spacer, .progress: []
        }
    }

    /// The Lock Screen card's background and action colors, from the root's modifiers.
    public var cardStyle: (backgroundTint: LayoutColor?, systemActionForegroundColor: LayoutColor?) {
        var style: (LayoutColor?, LayoutColor?) = (nil, nil)
        for modifier in modifiers {
            switch modifier {
            case .activityBackgroundTint(let color): style.0 = color
            case .activitySystemActionForegroundColor(let color): style.1 = color
            default: break
            }
        }
        return style
    }
}
