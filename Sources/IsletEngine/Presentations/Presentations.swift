import Foundation
import IsletCore
import Synchronization

/// Draws a layout with an activity's values: the renderer (IsletRender) does it; the engine
/// only caches and decides what to draw.
public typealias Drawing = @Sendable (_ layout: Layout, _ scope: LayoutScope, _ now: Date) -> Presentation

/// Draws activities' presentations once per change and shares them with every display.
///
/// A presentation depends on the activity's type's layout (its revision), its attributes, its
/// content and whether it is stale; the cache keeps the last drawing per activity with a
/// fingerprint of those, so a hundred displays asking after one update cost one render.
final class Presentations: Sendable {
    private let draw: Drawing
    private let clock: any WallClock
    private let cache = Mutex<[ActivityID: (fingerprint: Int, presentation: Presentation)]>([:])
    /// Parsed layouts by app, type and revision; a layout is parsed once per revision.
    private let layouts = Mutex<[String: (revision: Int, layout: Layout)]>([:])

    init(draw: @escaping Drawing, clock: any WallClock) {
        self.draw = draw
        self.clock = clock
    }

    /// The activity's presentations as they stood at `time`, drawn with `record`: a drawing of
    /// the past, which the cache of current ones does not keep.
    func presentation(of activity: Activity, layout record: LayoutRecord?, at time: Date) throws -> Presentation {
        let layout = try self.layout(record, for: activity)
        return draw(layout, scope(of: activity, in: layout), time)
    }

    private func scope(of activity: Activity, in layout: Layout) -> LayoutScope {
        LayoutScope(
            attributes: activity.attributes, state: activity.content.state, isStale: activity.state == .stale,
            dateEncoding: layout.dateEncoding
        )
    }

    /// The activity's presentations as they stand, drawn with `record` (its type's layout, or
    /// none: the default card).
    func presentation(of activity: Activity, layout record: LayoutRecord?) throws -> Presentation {
        var hasher = Hasher()
        hasher.combine(record?.revision ?? 0)
        hasher.combine(activity.attributes)
        hasher.combine(activity.content)
        hasher.combine(activity.state == .stale)
        let fingerprint = hasher.finalize()
        if let cached = cache.withLock({ $0[activity.id] }), cached.fingerprint == fingerprint {
            return cached.presentation
        }
        let layout = try self.layout(record, for: activity)
        let presentation = draw(layout, scope(of: activity, in: layout), clock.now())
        guard activity.state != .dismissed else { return presentation }
        cache.withLock { cache in
            // Bounded: past the limit, start again; a drawing is cheap, memory is not.
            if cache.count >= Self.cacheLimit { cache.removeAll(keepingCapacity: true) }
            cache[activity.id] = (fingerprint, presentation)
        }
        return presentation
    }

    /// The most drawings kept.
    static let cacheLimit = 20_000

    private func layout(_ record: LayoutRecord?, for activity: Activity) throws -> Layout {
        guard let record else {
            return .defaultCard(attributesType: activity.attributesType, attributes: activity.attributes, state: activity.content.state)
        }
        let key = "\(record.bundleId)\u{0}\(record.attributesType)"
        if let parsed = layouts.withLock({ $0[key] }), parsed.revision == record.revision { return parsed.layout }
        let layout = try Layout.parse(record.layout)
        layouts.withLock { $0[key] = (record.revision, layout) }
        return layout
    }
}
