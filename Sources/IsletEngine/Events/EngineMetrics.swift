import IsletCore

/// Where the engine reports what it counts. The server backs it with its Prometheus registry;
/// tests and tools that count nothing use `NoMetrics`.
public protocol EngineMetrics: Sendable {
    /// A commit was published: its events and effects.
    func published(_ commit: Commit)
    /// Subscribers came (positive) or went (negative).
    func subscriberCountChanged(by delta: Int)
    /// A queued content update was replaced by a newer one.
    func eventCoalesced()
    /// A subscriber fell so far behind that it was disconnected.
    func subscriberOverflowed()
    /// A webhook request was answered (or failed without an answer).
    func webhookAnswered(_ answer: WebhookAnswer)
    /// The webhook endpoints, as the dispatcher last read them: enabled and sending, holding
    /// on a failing event, disabled.
    func webhookEndpoints(sending: Int, failing: Int, disabled: Int)
}

extension EngineMetrics {
    public func webhookAnswered(_ answer: WebhookAnswer) {}
    public func webhookEndpoints(sending: Int, failing: Int, disabled: Int) {}
}

/// Metrics that count nothing.
public struct NoMetrics: EngineMetrics {
    public init() {}
    public func published(_ commit: Commit) {}
    public func subscriberCountChanged(by delta: Int) {}
    public func eventCoalesced() {}
    public func subscriberOverflowed() {}
}
