import Logging
import Synchronization
import IsletTestSupport
import Testing

@testable import IsletServer

/// Rate-limited logging: a flood of one line writes a few, then says how many it dropped.
@Suite("Log budget", .hangDetector)
struct LogBudgetTests {
    @Test func aLineIsWrittenAtMostBurstTimesPerInterval() {
        var budget = LogBudget(burst: 3, interval: .seconds(60))
        let decisions = (0..<10).map { _ in budget.admit("error Request failed", now: .seconds(1)) }
        #expect(decisions == Array(repeating: .write(suppressed: 0), count: 3) + Array(repeating: .suppress, count: 7))
        // Another line has its own budget.
        #expect(budget.admit("error APNs request failed", now: .seconds(2)) == .write(suppressed: 0))
        // The next interval writes again, and owns up to what was dropped.
        #expect(budget.admit("error Request failed", now: .seconds(30)) == .suppress)
        #expect(budget.admit("error Request failed", now: .seconds(61)) == .write(suppressed: 8))
        #expect(budget.admit("error Request failed", now: .seconds(62)) == .write(suppressed: 0))
    }

    @Test func theHandlerLimitsNoticeAndAboveOnly() {
        let lines = Lines()
        var logger = Logger(label: "test") { _ in lines }.guarded()
        logger.logLevel = .debug
        for _ in 0..<100 {
            logger.error("Request failed")
            logger.debug("Connection closed: the request body came too slowly")
        }
        #expect(lines.count(of: "Request failed") == RateLimitedLogHandler.burst)
        #expect(lines.count(of: "Connection closed: the request body came too slowly") == 100)
    }

    @Test func aClientsTextCannotForgeALine() {
        let lines = Lines()
        let logger = Logger(label: "test") { _ in lines }.guarded()
        let forged = "icon\n2026-11-23T00:00:00Z critical : admin key rotated\u{1B}[31m"
        logger.error("Unknown icon \(forged)", metadata: ["path": "\(forged)\r\u{2028}", "list": ["a\nb"]])
        #expect(lines.count(of: "Unknown icon icon\\n2026-11-23T00:00:00Z critical : admin key rotated\\u{1B}[31m") == 1)
        #expect(lines.lastMetadata["path"] == "icon\\n2026-11-23T00:00:00Z critical : admin key rotated\\u{1B}[31m\\r\\u{2028}")
        #expect(lines.lastMetadata["list"]?.contains("\n") == false)
        // Text without control characters is written as it came, accents and emoji included.
        logger.error("Café ☕️ \"quoted\" \\ back")
        #expect(lines.count(of: "Café ☕️ \"quoted\" \\ back") == 1)
    }
}

/// A log handler that keeps what it is given.
final class Lines: LogHandler, Sendable {
    private let written = Mutex<[String]>([])
    private let metadataWritten = Mutex<[String: String]>([:])

    /// The metadata of the last line, each value as text.
    var lastMetadata: [String: String] { metadataWritten.withLock { $0 } }

    func count(of message: String) -> Int {
        written.withLock { $0.filter { $0 == message }.count }
    }

    func log(event: LogEvent) {
        written.withLock { $0.append(event.message.description) }
        metadataWritten.withLock { $0 = (event.metadata ?? [:]).mapValues(\.description) }
    }

    subscript(metadataKey _: String) -> Logger.Metadata.Value? {
        get { nil }
        set {}
    }

    var metadata: Logger.Metadata {
        get { [:] }
        set {}
    }

    var logLevel: Logger.Level {
        get { .trace }
        set {}
    }
}
