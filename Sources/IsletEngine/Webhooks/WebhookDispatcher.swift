import Foundation
import IsletCore
import Logging
import ServiceLifecycle
import Synchronization

/// Sends one webhook request (IsletWebhooks' HTTP sender): signs it with the endpoint's secrets,
/// checks the address it connects to, and answers what came back.
public protocol WebhookTransport: Sendable {
    func send(_ event: WebhookEvent, to endpoint: WebhookEndpoint, at time: Date, timeout: TimeInterval) async -> WebhookAnswer
}

/// What came back from a webhook request.
public struct WebhookAnswer: Sendable, Hashable {
    /// The HTTP status, or `nil` when there was none (refused, timed out, a refused address).
    public var status: Int?
    /// The failure in words.
    public var error: String?
    public var latencyMs: Double
    /// The response's first bytes.
    public var response: String?

    public init(status: Int?, error: String?, latencyMs: Double, response: String?) {
        self.status = status
        self.error = error
        self.latencyMs = latencyMs
        self.response = response
    }

    public var succeeded: Bool { status.map { (200..<300).contains($0) } ?? false }
}

/// What the engine and its fan-out share with the webhook dispatcher.
final class WebhookSignals: Sendable {
    /// Wakes the dispatcher: a commit with events, a round ended, an endpoint changed.
    let wake = WakeSignal()
    /// Set by the engine when an endpoint is made or changed here: the dispatcher reads them again.
    let changed = Atomic<Bool>(true)
    /// Whether there is an enabled endpoint: only then does a commit wake the dispatcher.
    let active = Atomic<Bool>(false)
    /// This node, as an endpoint's lease names it: host, process, and a random part.
    let node = "\(ProcessInfo.processInfo.hostName)/\(ProcessInfo.processInfo.processIdentifier)/\(UUID().uuidString.prefix(8).lowercased())"

    /// Wakes the dispatcher for new events, when an endpoint wants them.
    func eventsCommitted() {
        if active.load(ordering: .relaxed) { wake.notify(deadline: .distantPast) }
    }

    /// Says an endpoint changed on this node.
    func endpointsChanged() {
        changed.store(true, ordering: .relaxed)
        wake.notify(deadline: .distantPast)
    }
}

/// Sends every enabled endpoint's events from its cursor (docs/webhooks.md, "Delivery"). One
/// round per endpoint at a time, so an endpoint that never answers holds only its own events;
/// a commit with events wakes the dispatcher, and it looks again every second. On a shared
/// store, a node sends an endpoint's events only while it holds the endpoint's lease.
final class WebhookDispatcher: Service {
    /// Events read per round.
    static let page = 100
    /// Requests in flight at once per endpoint, never two about one activity.
    static let concurrency = 16

    private let engine: Engine
    private let transport: any WebhookTransport
    private let settings: WebhookSettings
    private let logger: Logger
    private var node: String { engine.webhooks.node }
    /// Endpoints with a round in flight.
    private let busy = Mutex(Set<String>())
    /// Per endpoint: events after its cursor already answered 2xx (sent again only after a restart).
    private let acknowledged = Mutex([String: Set<EventID>]())
    /// Per endpoint: activities as they stood after the last event sent about them.
    private let snapshots = Mutex([String: [ActivityID: (event: EventID, activity: Activity)]]())

    init(engine: Engine, transport: any WebhookTransport, settings: WebhookSettings, logger: Logger) {
        self.engine = engine
        self.transport = transport
        self.settings = settings
        self.logger = logger
    }

    func run() async throws {
        // A round in flight is cancelled with the rest: its events are sent again after a restart.
        await cancelWhenGracefulShutdown {
            await self.dispatch()
        }
    }

    private func dispatch() async {
        var endpoints: [WebhookEndpoint] = []
        var readAt = Date.distantPast
        await withDiscardingTaskGroup { group in
            while !Task.isCancelled {
                do {
                    let now = engine.clock.now()
                    // Endpoints are read again when one changed on this node, and every second
                    // (another node's changes); commits wake the loop only while there are some.
                    if engine.webhooks.changed.exchange(false, ordering: .relaxed) || now.timeIntervalSince(readAt) >= 1 {
                        let stored = try await engine.read { try $0.webhookEndpoints(bundleId: nil) }
                        try await engine.removeAbandonedWebhookListeners(stored)
                        endpoints = stored.filter(\.enabled)
                        engine.metrics.webhookEndpoints(
                            sending: endpoints.count { $0.failingEvent == nil }, failing: endpoints.count { $0.failingEvent != nil },
                            disabled: stored.count - endpoints.count
                        )
                        readAt = now
                        engine.webhooks.active.store(!endpoints.isEmpty, ordering: .relaxed)
                    }
                    var next = readAt.addingTimeInterval(1)
                    for endpoint in endpoints where sendsHere(endpoint, at: now) {
                        if let due = endpoint.nextAttemptAt, due > now {
                            next = min(next, due)
                            continue
                        }
                        guard busy.withLock({ $0.insert(endpoint.id).inserted }) else { continue }
                        group.addTask {
                            let moved = await self.round(endpoint.id)
                            self.busy.withLock { _ = $0.remove(endpoint.id) }
                            // More may wait behind a full page, or a failure set a time to try again.
                            if moved { self.engine.webhooks.wake.notify(deadline: .distantPast) }
                        }
                    }
                    await engine.webhooks.wake.sleep(until: next, on: engine.clock)
                } catch {
                    logger.warning("Reading webhook endpoints failed; trying again in 1 s", metadata: ["error": "\(error)"])
                    try? await engine.clock.sleep(until: engine.clock.now().addingTimeInterval(1))
                }
            }
        }
    }

    /// Whether this node sends the endpoint's events now: a listening session's only on its
    /// node, while its lease holds; another unless another node holds it (only on a shared
    /// store: alone, a lease left by this node's previous run is its own).
    private func sendsHere(_ endpoint: WebhookEndpoint, at now: Date) -> Bool {
        if endpoint.isListener { return endpoint.leaseOwner == node && endpoint.leaseUntil.map { $0 > now } ?? false }
        return !(engine.store.isShared && endpoint.isLeased(toAnotherThan: node, at: now))
    }

    /// One round of one endpoint: a page of its events sent, its progress written; whether
    /// there was a page (another round may find more).
    private func round(_ id: String) async -> Bool {
        do {
            guard let (page, events, covered) = try await nextPage(id), let endpoint = try await lease(page) else { return false }
            // A request starts only if it ends with a quarter of the lease left, for the round's
            // write; a round begins with three quarters left, so it may send for half the lease
            // less one request's time (`webhooks.lease` is more than twice `webhooks.timeout`).
            let sendUntil = (endpoint.leaseUntil ?? .distantPast).addingTimeInterval(-settings.lease / 4 - settings.timeout)
            let answers = await send(events, to: endpoint, until: sendUntil)
            try await record(answers, of: events, covered: covered, for: endpoint)
            return true
        } catch {
            logger.warning("A webhook round failed; trying again", metadata: ["endpoint": "\(id)", "error": "\(error)"])
            return false
        }
    }

    /// The endpoint as stored, the events after its cursor that it wants (a page of the log's),
    /// and the last of the log's events the page covers; `nil` when there is nothing to do.
    private func nextPage(_ id: String) async throws -> (WebhookEndpoint, [WebhookEvent], covered: EventID)? {
        let cached = snapshots.withLock { $0[id] ?? [:] }
        let now = engine.clock.now()
        let (endpoint, events, covered, known) = try await engine.read { store -> (WebhookEndpoint?, [WebhookEvent], EventID, [ActivityID: (event: EventID, activity: Activity)]) in
            guard let endpoint = try store.webhookEndpoint(id), endpoint.enabled, self.sendsHere(endpoint, at: now),
                  endpoint.nextAttemptAt.map({ $0 <= now }) ?? true
            else { return (nil, [], 0, cached) }
            var known = cached
            var events: [WebhookEvent] = []
            var covered = endpoint.cursor
            for encoded in try store.events(after: endpoint.cursor, filter: EventFilter(bundleId: endpoint.bundleId), limit: Self.page) {
                covered = encoded.id
                guard let event = try? encoded.decoded() else { continue }
                let type = WebhookEvent.type(of: event).flatMap { endpoint.events.includes($0) ? $0 : nil }
                var activity: Activity?
                if let activityId = event.activityId {
                    // An activity already known moves on with every event of its, wanted or not
                    // (an update not sent still shows in the end that is); one not known yet is
                    // read when an event wants it.
                    if known[activityId] != nil || type?.family == "activity" {
                        activity = try Self.activity(activityId, after: event, known: &known, in: store)
                    }
                }
                guard let type else { continue }
                if let made = WebhookEvent.make(from: event, activity: type.family == "activity" ? activity : nil) { events.append(made) }
            }
            return (endpoint, events, covered, known)
        }
        snapshots.withLock { $0[id] = known.count > 10_000 ? [:] : known }
        guard let endpoint, covered > endpoint.cursor else { return nil }
        return (endpoint, events, covered)
    }

    /// The endpoint with this node's lease on it for at least `lease` from now: as read when
    /// this node already holds it for over half that, else taken in a write (so a node keeping
    /// an endpoint writes for it only when a round records); `nil` when another node took it,
    /// or the endpoint changed, since it was read.
    private func lease(_ endpoint: WebhookEndpoint) async throws -> WebhookEndpoint? {
        let now = engine.clock.now()
        if endpoint.leaseOwner == node, let until = endpoint.leaseUntil, until.timeIntervalSince(now) >= settings.lease * 0.75 {
            return endpoint
        }
        // A listening session renews its own.
        if endpoint.isListener { return sendsHere(endpoint, at: now) ? endpoint : nil }
        let shared = engine.store.isShared
        return try await engine.write { [node, settings] tx -> WebhookEndpoint? in
            guard var stored = try tx.webhookEndpoint(endpoint.id), stored.updatedAt == endpoint.updatedAt, stored.cursor == endpoint.cursor,
                  !(shared && stored.isLeased(toAnotherThan: node, at: tx.now))
            else { return nil }
            stored.leaseOwner = node
            stored.leaseUntil = tx.now.addingTimeInterval(settings.lease)
            try tx.putWebhookEndpoint(stored)
            return stored
        }
    }

    /// The activity as it stood just after `event`: from what this endpoint already replayed
    /// when it follows on, else from its history.
    private static func activity(
        _ id: ActivityID, after event: Event, known: inout [ActivityID: (event: EventID, activity: Activity)], in store: any StoreReading
    ) throws -> Activity? {
        if let (at, activity) = known[id] {
            if at == event.id { return activity }
            if at < event.id, event.type != .started {
                let next = try activity.replaying([event])
                known[id] = (event.id, next)
                return next
            }
        }
        guard let current = try store.activity(id) else { return nil }
        let history = try store.history(of: id).filter { $0.id <= event.id }.map { try $0.decoded() }
        let activity = try current.replaying(history)
        known[id] = (event.id, activity)
        return activity
    }

    /// Sends the events, at most `concurrency` at once and never two about one activity (or,
    /// for events about no activity, one device), each group in order and stopping at its first
    /// failure, and none started after `until`; returns the answers by event id. Events
    /// answered 2xx before (a retry's page) are not sent again.
    private func send(_ events: [WebhookEvent], to endpoint: WebhookEndpoint, until: Date) async -> [EventID: WebhookAnswer] {
        let done = acknowledged.withLock { $0[endpoint.id] ?? [] }
        var groups: [String: [WebhookEvent]] = [:]
        var order: [String] = []
        for event in events where !done.contains(event.eventId) {
            let key = event.activityId.map { "a:" + $0 } ?? "d:" + (event.deviceId ?? "")
            if groups[key] == nil { order.append(key) }
            groups[key, default: []].append(event)
        }
        return await withTaskGroup(of: [(EventID, WebhookAnswer)].self) { group in
            var answers: [EventID: WebhookAnswer] = [:]
            var next = order.makeIterator()
            func start() -> Bool {
                guard let key = next.next(), let queue = groups[key] else { return false }
                group.addTask {
                    var answered: [(EventID, WebhookAnswer)] = []
                    for event in queue {
                        guard self.engine.clock.now() < until else { break }
                        let answer = await self.transport.send(event, to: endpoint, at: self.engine.clock.now(), timeout: self.settings.timeout)
                        self.engine.metrics.webhookAnswered(answer)
                        answered.append((event.eventId, answer))
                        if !answer.succeeded { break }
                    }
                    return answered
                }
                return true
            }
            for _ in 0..<Self.concurrency where start() {}
            for await answered in group {
                for (id, answer) in answered { answers[id] = answer }
                _ = start()
            }
            return answers
        }
    }

    /// Writes the attempts and the endpoint's progress: its cursor past every event answered
    /// 2xx in order, up to the first not sent (the lease ran short) or failed; for the first
    /// that failed, the failure, its next attempt (or, its attempts spent, a dead letter), and
    /// the endpoint disabled once it has failed for `disableAfter`. The lease is renewed.
    private func record(_ answers: [EventID: WebhookAnswer], of events: [WebhookEvent], covered: EventID, for endpoint: WebhookEndpoint) async throws {
        let now = engine.clock.now()
        let done = acknowledged.withLock { $0[endpoint.id] ?? [] }
        var progress = endpoint
        var attempts: [WebhookAttempt] = []
        // The first failure in the log's order: every wanted event before it was answered 2xx
        // (a group stops only at its own failure, which would come first).
        var failed: (event: WebhookEvent, answer: WebhookAnswer)?
        // The first event not sent: the cursor stops before it.
        var unsent: EventID?
        for event in events {
            guard let answer = answers[event.eventId] else {
                if unsent == nil, !done.contains(event.eventId) { unsent = event.eventId }
                continue
            }
            let number = event.eventId == endpoint.failingEvent ? endpoint.attempts + 1 : 1
            attempts.append(WebhookAttempt(
                endpointId: endpoint.id, event: event.id, type: event.type, attempt: number, at: now, status: answer.status,
                error: answer.error, latencyMs: answer.latencyMs, response: answer.response
            ))
            if !answer.succeeded && failed == nil { failed = (event, answer) }
        }
        progress.cursor = min(failed.map { $0.event.eventId - 1 } ?? covered, unsent.map { $0 - 1 } ?? covered)
        var acknowledgedNow = done
        for (id, answer) in answers where answer.succeeded { acknowledgedNow.insert(id) }
        if let (event, _) = failed {
            let number = event.eventId == endpoint.failingEvent ? endpoint.attempts + 1 : 1
            if number >= settings.retrySchedule.count {
                // Given up on: written down as a dead letter, and the endpoint goes on.
                if let index = attempts.lastIndex(where: { $0.event == event.id }) { attempts[index].deadLetter = true }
                progress.cursor = min(event.eventId, unsent.map { $0 - 1 } ?? event.eventId)
                acknowledgedNow.insert(event.eventId)
                progress.failingEvent = nil
                progress.attempts = 0
                progress.nextAttemptAt = nil
                progress.failingSince = nil
            } else {
                progress.failingEvent = event.eventId
                progress.attempts = number
                // Since the endpoint began failing: a later event failing after this one does not restart it.
                progress.failingSince = endpoint.failingSince ?? now
                progress.nextAttemptAt = now.addingTimeInterval(settings.retrySchedule[number])
                if let since = progress.failingSince, now.timeIntervalSince(since) >= settings.disableAfter {
                    progress.enabled = false
                    progress.disabledReason = "failing since \(since.formatted(.iso8601)): \(attempts.last?.error ?? attempts.last.flatMap { $0.status.map { "HTTP \($0)" } } ?? "no answer")"
                }
            }
        } else {
            progress.failingEvent = nil
            progress.attempts = 0
            progress.failingSince = nil
            progress.nextAttemptAt = nil
        }
        acknowledged.withLock { $0[endpoint.id] = acknowledgedNow.filter { $0 > progress.cursor } }
        let written = progress
        let recorded = attempts
        try await engine.write { [node, settings] tx in
            // A change made meanwhile (a replay, a new URL, disabled by hand) or another node
            // that took the endpoint over wins: the round's progress is dropped, its events sent again.
            guard let stored = try tx.webhookEndpoint(endpoint.id), stored.updatedAt == endpoint.updatedAt, stored.cursor == endpoint.cursor,
                  stored.leaseOwner == node
            else {
                try tx.addWebhookAttempts(recorded)
                return
            }
            var next = stored
            next.cursor = written.cursor
            next.failingEvent = written.failingEvent
            next.attempts = written.attempts
            next.failingSince = written.failingSince
            next.nextAttemptAt = written.nextAttemptAt
            next.enabled = written.enabled
            next.disabledReason = written.disabledReason
            next.leaseUntil = tx.now.addingTimeInterval(settings.lease)
            if !written.enabled { next.updatedAt = tx.now }
            try tx.putWebhookEndpoint(next)
            try tx.addWebhookAttempts(recorded)
        }
        if !written.enabled {
            logger.error("A webhook endpoint was disabled", metadata: ["endpoint": "\(endpoint.id)", "reason": "\(written.disabledReason ?? "")"])
        }
    }
}
