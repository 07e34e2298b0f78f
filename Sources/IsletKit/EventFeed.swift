import Foundation
import IsletClient
import IsletCore
import Logging
import Synchronization

/// The one event stream a process keeps to its server, for every activity sequence IsletKit
/// offers: the app's events on the connection's device, over Server-Sent Events.
///
/// It starts with the first thing that needs it, and never loses an event: after a dropped
/// connection it reconnects (after 0.2 s, doubling to 5 s) and resumes after the last event it
/// saw. Each event first brings the `Activity` objects up to date, then goes to the listeners.
final class EventFeed: Sendable {
    private let client: IsletClient
    private let device: String
    private let app: String?
    private let logger: Logger
    private struct State {
        var listeners: [UUID: @Sendable (Event) -> Void] = [:]
        var lastEventId: EventID?
        var task: Task<Void, Never>?
        /// Whether the stream is subscribed now: events committed from here on will arrive.
        var connected = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Mutex(State())

    init(client: IsletClient, device: String, app: String?, logger: Logger) {
        self.client = client
        self.device = device
        self.app = app
        self.logger = logger
    }

    var isStarted: Bool { state.withLock { $0.task != nil } }

    /// Starts following events after `eventId` (if it has not started yet); with none, after the
    /// server's newest event, asked for now (blocking), so nothing committed from here on is
    /// missed.
    func start(after eventId: EventID? = nil) {
        guard !isStarted else { return }
        var since = eventId
        if since == nil {
            since = try? client.lastEventIDBlocking()
        }
        state.withLock { state in
            guard state.task == nil else { return }
            state.lastEventId = since
            state.task = Task { [self] in await run() }
        }
    }

    /// Stops following events: the connection it served was replaced.
    func stop() {
        let task = state.withLock { state in
            defer { state.task = nil }
            return state.task
        }
        task?.cancel()
    }


    /// Calls `listener` with every event from now on, until the returned token is cancelled.
    func listen(_ listener: @escaping @Sendable (Event) -> Void) -> UUID {
        let id = UUID()
        state.withLock { $0.listeners[id] = listener }
        start()
        return id
    }

    func stopListening(_ id: UUID) {
        state.withLock { _ = $0.listeners.removeValue(forKey: id) }
    }

    /// Returns once the stream is subscribed (so every event committed afterwards arrives).
    func connected() async {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state in
                if state.connected { return true }
                state.waiters.append(continuation)
                return false
            }
            if ready { continuation.resume() }
        }
    }

    private func run() async {
        var delay = Duration.milliseconds(200)
        while !Task.isCancelled {
            do {
                let since = state.withLock { $0.lastEventId }
                let events = try await client.events(
                    IsletClient.StreamOptions(filter: EventFilter(bundleId: app, deviceId: device), since: since, coalesce: false)
                )
                let waiters = state.withLock { state in
                    state.connected = true
                    defer { state.waiters = [] }
                    return state.waiters
                }
                waiters.forEach { $0.resume() }
                delay = .milliseconds(200)
                for try await event in events {
                    deliver(event)
                }
            } catch {
                logger.notice("The event stream dropped; reconnecting", metadata: ["error": "\(error)"])
            }
            state.withLock { $0.connected = false }
            guard !Task.isCancelled else { return }
            try? await Task.sleep(for: delay)
            delay = min(delay * 2, .seconds(5))
        }
    }

    private func deliver(_ event: Event) {
        let listeners = state.withLock { state in
            state.lastEventId = max(state.lastEventId ?? 0, event.id)
            return Array(state.listeners.values)
        }
        if let id = event.activityId {
            Registry.shared.receive(event, for: id)
        }
        for listener in listeners { listener(event) }
    }
}

/// What an event means for one stream: a value, or its last value.
enum FeedStep<Element> {
    case value(Element)
    case last(Element)
}

extension AsyncStream {
    /// A stream of what `transform` makes of the feed's events, for as long as it is iterated,
    /// starting with `first()` when that has a value.
    static func following(
        _ feed: EventFeed, first: @escaping @Sendable () -> sending Element? = { nil },
        _ transform: @escaping @Sendable (Event) -> sending FeedStep<Element>?
    ) -> AsyncStream<Element> {
        AsyncStream { continuation in
            if let value = first() { continuation.yield(value) }
            let id = feed.listen { event in
                switch transform(event) {
                case .value(let value)?:
                    continuation.yield(value)
                case .last(let value)?:
                    continuation.yield(value)
                    continuation.finish()
                case nil:
                    break
                }
            }
            continuation.onTermination = { _ in feed.stopListening(id) }
        }
    }
}
