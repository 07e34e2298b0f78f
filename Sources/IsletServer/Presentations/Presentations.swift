import Foundation
import IsletCore
import IsletRender
import IsletStore
import Logging
import Synchronization

/// Draws activities' presentations once per change and shares them with every display.
///
/// A presentation depends on the activity's type's layout (its revision), its attributes, its
/// content and whether it is stale; the cache keeps the last drawing per activity with a
/// fingerprint of those, so a hundred displays asking after one update cost one render.
final class Presentations: Sendable {
    private let store: SQLiteStore
    private let renderer: Renderer
    private let clock: any WallClock
    private let cache = Mutex<[ActivityID: (fingerprint: Int, presentation: Presentation)]>([:])
    /// Parsed layouts by app, type and revision; a layout is parsed once per revision.
    private let layouts = Mutex<[String: (revision: Int, layout: Layout)]>([:])

    init(store: SQLiteStore, clock: any WallClock, logger: Logger) {
        self.store = store
        self.clock = clock
        self.renderer = Renderer { name in
            logger.notice("A layout names an icon Islet does not have; drawing a placeholder", metadata: ["systemName": "\(name)"])
        }
    }

    /// The activity's presentations as they stand.
    func presentation(of activity: Activity) async throws -> Presentation {
        let record = try await store.layout(bundleId: activity.bundleId, attributesType: activity.attributesType)
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
        let scope = LayoutScope(
            attributes: activity.attributes, state: activity.content.state, isStale: activity.state == .stale,
            dateEncoding: layout.dateEncoding
        )
        let presentation = renderer.render(layout, scope: scope, now: clock.now())
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
