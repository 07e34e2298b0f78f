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
struct EventStream {
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
        var cursor = request.since
        if let since = request.since {
            // An id ahead of the newest event (a client that outlived a reset data directory)
            // means "from now": holding live events back until ids catch up would lose them.
            let newest = try await engine.lastEventID()
            cursor = min(since, newest)
        }
        if var after = cursor {
            while true {
                let page = try await engine.events(after: after, filter: request.filter, limit: settings.replayPageSize)
                if page.isEmpty { break }
                try await send(shown(page))
                after = page[page.count - 1].id
                cursor = after
                if page.count < settings.replayPageSize { break }
            }
        }
        while true {
            switch await subscription.next() {
            case .events(let events):
                let fresh = cursor.map { last in events.filter { $0.id > last } } ?? events
                if let newest = fresh.last {
                    try await send(shown(fresh))
                    cursor = newest.id
                }
            case .idle:
                try await keepAlive()
            case .finished(let reason):
                return reason
            }
        }
    }

    private func shown(_ events: [EncodedEvent]) -> [EncodedEvent] {
        request.withoutTokens ? events.compactMap(\.withoutTokens) : events
    }

    /// Registers the stream's subscription with the bus.
    func subscribe() -> Subscription {
        engine.bus.subscribe(filter: request.filter, coalesces: request.coalesces)
    }
}
