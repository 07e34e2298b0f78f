import Logging
import Synchronization

/// Keeps a flood of one log line from drowning the log — a client provoking the same refusal
/// thousands of times a second must not write thousands of lines. Lines at `notice` and above
/// are let through at most `LogBudget.burst` times per interval each (by level and text); the
/// rest are counted, and the next line let through is preceded by how many were dropped. Lines
/// below `notice` pass untouched: they are off unless someone asked for them.
struct RateLimitedLogHandler: ForwardingLogHandler {
    /// Each message's budget: ten lines a minute.
    static let burst = 10
    static let interval = Duration.seconds(60)

    /// The budget, shared by every copy of the handler a logger makes.
    private final class Shared: Sendable {
        let budget = Mutex(LogBudget(burst: RateLimitedLogHandler.burst, interval: RateLimitedLogHandler.interval))
        let origin = ContinuousClock.now
    }

    var wrapped: any LogHandler
    private let shared = Shared()

    init(wrapping handler: any LogHandler) {
        wrapped = handler
    }

    func log(event: LogEvent) {
        guard event.level >= .notice else { return wrapped.log(event: event) }
        let text = event.message.description
        let now = ContinuousClock.now - shared.origin
        let decision = shared.budget.withLock { $0.admit("\(event.level) \(text)", now: now) }
        switch decision {
        case .suppress:
            return
        case .write(let suppressed):
            if suppressed > 0 {
                var summary = event
                summary.message = "\(suppressed) more lines like the next were suppressed (at most \(Self.burst) a minute are written)"
                summary.metadata = nil
                wrapped.log(event: summary)
            }
            wrapped.log(event: event)
        }
    }
}

extension Logger {
    /// This logger as the server writes: every line one line (`EscapingLogHandler`), lines at
    /// `notice` and above rate-limited (`RateLimitedLogHandler`).
    func guarded() -> Logger {
        var logger = self
        logger.handler = RateLimitedLogHandler(wrapping: EscapingLogHandler(wrapping: handler))
        return logger
    }
}

/// A handler that passes lines on to another, after changing or dropping them; everything
/// else (level, metadata) is the wrapped handler's.
protocol ForwardingLogHandler: LogHandler {
    var wrapped: any LogHandler { get set }
}

extension ForwardingLogHandler {
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { wrapped[metadataKey: key] }
        set { wrapped[metadataKey: key] = newValue }
    }

    var metadata: Logger.Metadata {
        get { wrapped.metadata }
        set { wrapped.metadata = newValue }
    }

    var logLevel: Logger.Level {
        get { wrapped.logLevel }
        set { wrapped.logLevel = newValue }
    }

    var metadataProvider: Logger.MetadataProvider? {
        get { wrapped.metadataProvider }
        set { wrapped.metadataProvider = newValue }
    }
}
