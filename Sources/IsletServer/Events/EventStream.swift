import Foundation
import IsletCore
import IsletEngine

/// What a stream subscriber asked for: which events, from where, and whether it accepts
/// coalesced content updates.
struct StreamRequest: Sendable {
    var filter: EventFilter
    /// Resume after this event id (from `Last-Event-ID` or `?since=`); `nil` for live events only.
    var since: EventID?
    var coalesces: Bool
    /// Whether push tokens are left out (`EncodedEvent.withoutTokens`): a display without a key
    /// sees what the phone's screen shows, never what lets a provider push to it.
    var withoutTokens = false
}

/// Streams events to one subscriber, whatever the transport: first the stored events after
/// `since`, then live ones, with no gap and no duplicate between the two.
///
/// The subscriber is registered with the bus before the store is read, so nothing committed in
/// between is missed; live events already replayed are skipped by id.
struct EventStream: Sendable {
    let engine: Engine
    let settings: StreamSettings
    let request: StreamRequest

    /// Streams until the subscription ends.
    /// - Parameters:
    ///   - subscription: The subscription registered for this stream (see `subscribe()`).
    ///   - send: Writes events to the subscriber, in order.
    ///   - keepAlive: Tells the subscriber the stream is alive after a quiet interval.
    /// - Returns: Why the stream ended.
    func run(
        _ subscription: Subscription, send: ([EncodedEvent]) async throws -> Void, keepAlive: () async throws -> Void
    ) async throws -> Subscription.FinishReason {
        defer { engine.bus.remove(subscription) }
        var cursor = try await replay(send: send)
        while true {
            switch await subscription.next() {
            case .events(let events):
                if let fresh = cursor.fresh(events) { try await send(fresh) }
            case .idle:
                try await keepAlive()
            case .finished(let reason):
                return reason
            }
        }
    }

    /// Sends the stored events after `since`, page by page, and returns where live events take
    /// over. Call it once the subscription is registered, so nothing committed meanwhile is lost.
    func replay(send: ([EncodedEvent]) async throws -> Void) async throws -> Cursor {
        var cursor = Cursor(last: request.since, withoutTokens: request.withoutTokens)
        if let since = request.since {
            // An id ahead of the newest event (a client that outlived a reset data directory)
            // means "from now": holding live events back until ids catch up would lose them.
            let newest = try await engine.lastEventID()
            cursor.last = min(since, newest)
        }
        if var after = cursor.last {
            while true {
                let page = try await engine.events(after: after, filter: request.filter, limit: settings.replayPageSize)
                if page.isEmpty { break }
                let shown = cursor.shown(page)
                if !shown.isEmpty { try await send(shown) }
                after = page[page.count - 1].id
                cursor.last = after
                if page.count < settings.replayPageSize { break }
            }
        }
        return cursor
    }

    /// Where a subscriber is in the log: live events it was already sent (replayed) are skipped
    /// by id, and tokens left out for a reader without a key.
    struct Cursor: Sendable {
        var last: EventID?
        let withoutTokens: Bool

        /// The events of a live batch the subscriber has not had, as it may see them; `nil` when
        /// there are none. Moves the cursor past them.
        mutating func fresh(_ events: [EncodedEvent]) -> [EncodedEvent]? {
            let fresh = last.map { last in events.filter { $0.id > last } } ?? events
            guard let newest = fresh.last else { return nil }
            last = newest.id
            let shown = shown(fresh)
            return shown.isEmpty ? nil : shown
        }

        func shown(_ events: [EncodedEvent]) -> [EncodedEvent] {
            withoutTokens ? events.compactMap(\.withoutTokens) : events
        }
    }

    /// Registers the stream's subscription with the bus.
    func subscribe() -> Subscription {
        engine.bus.subscribe(filter: request.filter, coalesces: request.coalesces)
    }
}
