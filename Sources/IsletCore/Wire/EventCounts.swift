import Foundation

/// What the event stream carried since a node started, as `GET /v1/overview` reports it:
/// content updates applied, updates dropped by reason, requests to Apple and Apple's answers
/// by status. The server keeps the totals, so every reader sees the same ones and reloading a
/// page resets nothing; a rate is the difference of two readings over the time between them.
public struct EventCounts: Codable, Hashable, Sendable {
    /// When counting began: the node's start.
    public var since: Date
    /// Content updates applied (`contentUpdated` events).
    public var updates = 0
    /// Updates and pushes the rules dropped, by `IgnoreReason` (`updateIgnored` events).
    public var dropped: [String: Int] = [:]
    /// Requests made to Apple (`delivery` events of an attempt).
    public var pushes = 0
    /// Apple's answers to them, by HTTP status; `none` when Apple did not answer.
    public var answers: [String: Int] = [:]

    /// Nothing counted yet, from `since`.
    public init(since: Date) {
        self.since = since
    }

    /// Counts one event, if it is one of those counted.
    public mutating func count(_ event: EncodedEvent) {
        switch event.type {
        case .contentUpdated:
            updates += 1
        case .updateIgnored:
            guard let data = Self.data(of: event) else { return }
            dropped[data.reason ?? "unknown", default: 0] += 1
        case .delivery:
            // A decision without a request (queued, held, coalesced, dropped) has no attempt.
            guard let data = Self.data(of: event), let attempt = data.attempt, attempt > 0, data.outcome != DeliveryReport.Outcome.queued.rawValue
            else { return }
            pushes += 1
            answers[data.status.map(String.init) ?? "none", default: 0] += 1
        default:
            return
        }
    }

    /// Adds another's totals (another app's); counting began at the earlier start.
    public mutating func add(_ other: EventCounts) {
        since = min(since, other.since)
        updates += other.updates
        dropped.merge(other.dropped, uniquingKeysWith: +)
        pushes += other.pushes
        answers.merge(other.answers, uniquingKeysWith: +)
    }

    /// The fields of an event's data that counting reads.
    private struct Fields {
        var reason: String?
        var attempt: Int?
        var outcome: String?
        var status: Int?
    }

    /// Reads them with Islet's own parser (`JSONSyntax`): every delivery line passes here, and
    /// `JSONDecoder` was a tenth of a delivery's cost.
    private static func data(of event: EncodedEvent) -> Fields? {
        var json = event.json
        guard let parsed = json.withUTF8({ try? JSONSyntax.parse(UnsafeRawBufferPointer($0)) }), let data = parsed["data"]?.objectValue else {
            return nil
        }
        return Fields(
            reason: data["reason"]?.stringValue, attempt: data["attempt"]?.integerValue.map(Int.init),
            outcome: data["outcome"]?.stringValue, status: data["status"]?.integerValue.map(Int.init)
        )
    }
}
