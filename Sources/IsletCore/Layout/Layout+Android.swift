import Foundation

/// The `android` region of a layout: what an Android 16 Live Update (a promoted ongoing
/// notification) shows — a title, a text, a sub-text, the status-bar chip's short critical text,
/// and a `ProgressStyle` bar with segments and points — written with the values every region
/// uses (docs/android.md, "The notification"). A text is one value or an array of them joined,
/// as `Text` takes.
public struct AndroidLayout: Hashable, Sendable {
    public var title: [LayoutValue]
    public var text: [LayoutValue]?
    public var subText: [LayoutValue]?
    public var shortCriticalText: [LayoutValue]?
    public var progress: Progress?

    /// `Notification.ProgressStyle`: a value out of `max`, or indeterminate; segments that
    /// split the bar by length, and points at positions on it.
    public struct Progress: Hashable, Sendable {
        public var value: LayoutValue?
        public var max: LayoutValue
        public var indeterminate: LayoutValue?
        public var segments: [Segment]
        public var points: [Point]
    }

    public struct Segment: Hashable, Sendable {
        public var length: LayoutValue
        public var color: LayoutColor?
    }

    public struct Point: Hashable, Sendable {
        public var position: LayoutValue
        public var color: LayoutColor?
    }

    /// AOSP's `ProgressStyle` draws at most this many segments and points.
    public static let maximumSegments = 10
    public static let maximumPoints = 4
    /// The chip's text Android suggests at most (a longer one is cut).
    public static let suggestedShortCriticalText = 7
    /// The largest `max` a bar may have.
    public static let largestMax = 1_000_000

    public init(
        title: [LayoutValue], text: [LayoutValue]? = nil, subText: [LayoutValue]? = nil, shortCriticalText: [LayoutValue]? = nil,
        progress: Progress? = nil
    ) {
        self.title = title
        self.text = text
        self.subText = subText
        self.shortCriticalText = shortCriticalText
        self.progress = progress
    }

    static func parse(_ value: JSONValue, at path: String) throws(IsletError) -> AndroidLayout {
        var reader = try LayoutReader(value, at: path, expecting: "the Android notification (title, text, subText, shortCriticalText, progress)")
        func text(_ key: String) throws(IsletError) -> [LayoutValue]? {
            guard let value = reader.value(key) else { return nil }
            let place = reader.place(key)
            guard case .array(let items) = value else { return [try LayoutValue.parse(value, at: place)] }
            guard !items.isEmpty else { throw LayoutReader.error(at: place, "expected a value, or an array of one or more") }
            var parts: [LayoutValue] = []
            for (index, item) in items.enumerated() { parts.append(try LayoutValue.parse(item, at: "\(place)[\(index)]")) }
            return parts
        }
        guard let title = try text("title") else {
            throw LayoutReader.error(at: reader.place("title"), "a Live Update needs a title: Android promotes no notification without one")
        }
        let layout = AndroidLayout(
            title: title, text: try text("text"), subText: try text("subText"), shortCriticalText: try text("shortCriticalText"),
            progress: try reader.value("progress").map { value throws(IsletError) in try Progress.parse(value, at: reader.place("progress")) }
        )
        try reader.finish()
        return layout
    }

    /// The notification drawn for one activity at `now` (Unix seconds).
    public func notification(in scope: LayoutScope, now: Double) -> AndroidNotification {
        func joined(_ parts: [LayoutValue]?) -> String? {
            guard let parts else { return nil }
            let text = parts.compactMap { ValueText.text(of: $0, in: scope, now: now) }.joined()
            return text.isEmpty ? nil : text
        }
        return AndroidNotification(
            title: joined(title) ?? "", text: joined(text), subText: joined(subText), shortCriticalText: joined(shortCriticalText),
            progress: progress?.resolve(in: scope)
        )
    }
}

extension AndroidLayout.Progress {
    static func parse(_ value: JSONValue, at path: String) throws(IsletError) -> Self {
        var reader = try LayoutReader(value, at: path, expecting: "a progress bar (value, max, indeterminate, segments, points)")
        func optional(_ key: String) throws(IsletError) -> LayoutValue? {
            try reader.value(key).map { value throws(IsletError) in try LayoutValue.parse(value, at: reader.place(key)) }
        }
        let value = try optional("value")
        let max = try optional("max") ?? .literal(100)
        let indeterminate = try optional("indeterminate")
        guard value != nil || indeterminate != nil else {
            throw reader.error("a progress bar has a value, or is indeterminate (\"indeterminate\": true)")
        }
        let literalMax = try Self.literalWhole(max, at: reader.place("max"), in: 1...AndroidLayout.largestMax)
        var segments: [AndroidLayout.Segment] = []
        for (index, item) in (try reader.array("segments") ?? []).enumerated() {
            let place = "\(reader.place("segments"))[\(index)]"
            var segment = try LayoutReader(item, at: place, expecting: "a segment (length, color)")
            let length = try LayoutValue.parse(try segment.required("length", "a whole number above 0"), at: segment.place("length"))
            _ = try Self.literalWhole(length, at: segment.place("length"), in: 1...AndroidLayout.largestMax)
            let color = try segment.value("color").map { value throws(IsletError) in try LayoutColor.parse(value, at: segment.place("color")) }
            try segment.finish()
            segments.append(AndroidLayout.Segment(length: length, color: color))
        }
        var points: [AndroidLayout.Point] = []
        for (index, item) in (try reader.array("points") ?? []).enumerated() {
            let place = "\(reader.place("points"))[\(index)]"
            var point = try LayoutReader(item, at: place, expecting: "a point (position, color)")
            let position = try LayoutValue.parse(try point.required("position", "a whole number from 0 to max"), at: point.place("position"))
            _ = try Self.literalWhole(position, at: point.place("position"), in: 0...(literalMax ?? AndroidLayout.largestMax))
            let color = try point.value("color").map { value throws(IsletError) in try LayoutColor.parse(value, at: point.place("color")) }
            try point.finish()
            points.append(AndroidLayout.Point(position: position, color: color))
        }
        guard segments.count <= AndroidLayout.maximumSegments else {
            throw LayoutReader.error(at: reader.place("segments"), "Android draws at most \(AndroidLayout.maximumSegments) segments, not \(segments.count)")
        }
        guard points.count <= AndroidLayout.maximumPoints else {
            throw LayoutReader.error(at: reader.place("points"), "Android draws at most \(AndroidLayout.maximumPoints) points, not \(points.count)")
        }
        try reader.finish()
        return Self(value: value, max: max, indeterminate: indeterminate, segments: segments, points: points)
    }

    /// A literal that must be a whole number in `range`, checked when the layout is stored; a
    /// binding is checked when it is drawn.
    private static func literalWhole(_ value: LayoutValue, at path: String, in range: ClosedRange<Int>) throws(IsletError) -> Int? {
        guard case .literal(let literal) = value.source else { return nil }
        guard let number = literal.numberValue, number.rounded() == number, number >= Double(range.lowerBound), number <= Double(range.upperBound) else {
            throw LayoutReader.error(at: path, "expected a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return Int(number)
    }

    /// The bar for one activity: bound numbers that are not whole numbers in range are left
    /// out (a value is clamped into 0…max), never handed on.
    func resolve(in scope: LayoutScope) -> AndroidNotification.Progress {
        func whole(_ value: LayoutValue?, in range: ClosedRange<Int>) -> Int? {
            guard let number = value?.resolve(in: scope)?.numberValue, number.isFinite else { return nil }
            return Int(Swift.min(Swift.max(number.rounded(.down), Double(range.lowerBound)), Double(range.upperBound)))
        }
        let max = whole(max, in: 1...AndroidLayout.largestMax) ?? 100
        let indeterminate = indeterminate?.resolve(in: scope) == .bool(true)
        return AndroidNotification.Progress(
            value: whole(value, in: 0...max) ?? 0, max: max, indeterminate: indeterminate,
            segments: segments.compactMap { segment in
                guard let length = segment.length.resolve(in: scope)?.numberValue, length >= 1, length <= Double(AndroidLayout.largestMax) else { return nil }
                return AndroidNotification.Segment(length: Int(length.rounded(.down)), color: segment.color?.androidHex)
            },
            points: points.compactMap { point in
                guard let position = point.position.resolve(in: scope)?.numberValue, position >= 0, position <= Double(max) else { return nil }
                return AndroidNotification.Point(position: Int(position.rounded(.down)), color: point.color?.androidHex)
            }
        )
    }
}

/// An Android Live Update as drawn for one activity: what `data.islet.notification` carries and
/// what the app puts in its `Notification.Builder` and `ProgressStyle`.
public struct AndroidNotification: Codable, Hashable, Sendable {
    public var title: String
    public var text: String?
    public var subText: String?
    public var shortCriticalText: String?
    public var progress: Progress?

    public init(title: String, text: String? = nil, subText: String? = nil, shortCriticalText: String? = nil, progress: Progress? = nil) {
        self.title = title
        self.text = text
        self.subText = subText
        self.shortCriticalText = shortCriticalText
        self.progress = progress
    }

    public struct Progress: Codable, Hashable, Sendable {
        public var value: Int
        public var max: Int
        public var indeterminate: Bool
        public var segments: [Segment]
        public var points: [Point]

        public init(value: Int, max: Int, indeterminate: Bool = false, segments: [Segment] = [], points: [Point] = []) {
            self.value = value
            self.max = max
            self.indeterminate = indeterminate
            self.segments = segments
            self.points = points
        }

        enum CodingKeys: String, CodingKey {
            case value, max, indeterminate, segments, points
        }

        /// Reads a progress as another sender may write it: only `value` and `max` are needed.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            value = try container.decode(Int.self, forKey: .value)
            max = try container.decode(Int.self, forKey: .max)
            indeterminate = try container.decodeIfPresent(Bool.self, forKey: .indeterminate) ?? false
            segments = try container.decodeIfPresent([Segment].self, forKey: .segments) ?? []
            points = try container.decodeIfPresent([Point].self, forKey: .points) ?? []
        }
    }

    public struct Segment: Codable, Hashable, Sendable {
        public var length: Int
        /// `#RRGGBB` or `#RRGGBBAA`; `nil` for the app's default.
        public var color: String?

        public init(length: Int, color: String? = nil) {
            self.length = length
            self.color = color
        }
    }

    public struct Point: Codable, Hashable, Sendable {
        public var position: Int
        public var color: String?

        public init(position: Int, color: String? = nil) {
            self.position = position
            self.color = color
        }
    }
}

extension LayoutColor {
    /// The color as Android takes it from the payload: `#RRGGBB` (`#RRGGBBAA` when not opaque),
    /// a system color by iOS's light value, the light one of an adaptive pair; `nil` for the
    /// colors that mean "the default" (primary, secondary, the accent).
    var androidHex: String? {
        switch self {
        case .rgba(let red, let green, let blue, let alpha):
            let hex = [red, green, blue].map { String(format: "%02X", $0) }.joined()
            return "#" + hex + (alpha == 255 ? "" : String(format: "%02X", alpha))
        case .adaptive(let light, _):
            return light.androidHex
        case .system(let color):
            let values: [SystemColor: String] = [
                .red: "#FF3B30", .orange: "#FF9500", .yellow: "#FFCC00", .green: "#34C759", .mint: "#00C7BE", .teal: "#30B0C7",
                .cyan: "#32ADE6", .blue: "#007AFF", .indigo: "#5856D6", .purple: "#AF52DE", .pink: "#FF2D55", .brown: "#A2845E",
                .gray: "#8E8E93", .white: "#FFFFFF", .black: "#000000", .clear: "#00000000",
            ]
            return values[color]
        }
    }
}
