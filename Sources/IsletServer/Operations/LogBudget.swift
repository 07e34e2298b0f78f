/// How many times one log line may be written: at most `burst` times per `interval`; the rest
/// are counted, and the count is owed to the log when the line is next let through. A value,
/// keyed by the line's text, with the time passed in.
struct LogBudget {
    /// What to do with a line.
    enum Decision: Equatable {
        /// Write it; `suppressed` lines like it were dropped since it was last written.
        case write(suppressed: Int)
        /// Drop it.
        case suppress
    }

    private struct Window {
        var start: Duration
        var written: Int
        var suppressed: Int
    }

    let burst: Int
    let interval: Duration
    /// Past this many distinct lines, windows that have ended are forgotten.
    let maxKeys = 1024
    private var windows: [String: Window] = [:]

    init(burst: Int, interval: Duration) {
        self.burst = burst
        self.interval = interval
    }

    /// Decides on one line at `now` (any monotonic time, as a duration since its origin).
    mutating func admit(_ key: String, now: Duration) -> Decision {
        guard var window = windows[key], now - window.start < interval else {
            let suppressed = windows[key]?.suppressed ?? 0
            if windows.count >= maxKeys { windows = windows.filter { now - $0.value.start < interval } }
            windows[key] = Window(start: now, written: 1, suppressed: 0)
            return .write(suppressed: suppressed)
        }
        defer { windows[key] = window }
        guard window.written < burst else {
            window.suppressed += 1
            return .suppress
        }
        window.written += 1
        return .write(suppressed: 0)
    }
}
