import Foundation
import IsletCore
@testable import IsletEngine
import IsletRender
import IsletStore
import ServiceLifecycle
import Logging
import Synchronization
import IsletTestSupport
import Testing

/// Stopping is not a failure: a timer cancelled by shutdown while it talks to the store ends
/// quietly, with no error-level line (an operator's alerting counts those).
@Suite("Shutdown", .hangDetector)
struct ShutdownTests {
    @Test func theDeadlineSchedulerStopsQuietlyWhenCancelledMidRound() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("islet-shutdown-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let clock = GatedClock(now: t0)
        let store = try SQLiteStore(path: directory.appendingPathComponent("islet.sqlite").path)
        let records = LogRecords()
        let logger = Logger(label: "shutdown-test") { _ in records.handler() }
        let renderer = Renderer()
        let engine = Engine(store: store, clock: clock, draw: { renderer.render($0, scope: $1, now: $2) }, logger: logger)
        // The writer and the fan-out, not the bus: its keep-alive beat reads the clock too.
        let essentials = ServiceGroup(configuration: .init(services: engine.essentials.filter { !($0 is EventBus) }, logger: logger))
        let running = Task { try await essentials.run() }
        defer { running.cancel() }
        let scheduler = DeadlineScheduler(engine: engine, logger: logger)

        // The scheduler's first round reads the clock, and waits there until the test has
        // cancelled it; the round then goes on to the store with its task cancelled.
        clock.closeGate()
        let round = Task { try await scheduler.run() }
        await clock.waitUntilSomeoneWaits()
        round.cancel()
        clock.openGate()
        try await round.value
        await essentials.triggerGracefulShutdown()
        try await running.value

        #expect(records.entries.filter { $0.level >= .error }.map(\.message) == [])
    }
}

/// A clock whose `now()` can be made to wait, so a test can act while a timer is mid-round.
final class GatedClock: WallClock {
    private struct State {
        var now: Date
        var closed = false
        var waiting = false
    }

    private let state: Mutex<State>
    private let gate = DispatchSemaphore(value: 0)

    init(now: Date) {
        state = Mutex(State(now: now))
    }

    func now() -> Date {
        let wait = state.withLock { state -> Bool in
            defer { state.closed = false }
            state.waiting = state.closed
            return state.closed
        }
        if wait { gate.wait() }
        return state.withLock { $0.now }
    }

    func sleep(until deadline: Date) async throws {
        try await Task.sleep(for: .seconds(3600))
    }

    func closeGate() { state.withLock { $0.closed = true } }
    func openGate() { gate.signal() }

    func waitUntilSomeoneWaits() async {
        while !state.withLock({ $0.waiting }) { await Task.yield() }
    }
}

/// Log lines captured in memory.
final class LogRecords: Sendable {
    struct Entry: Sendable {
        var level: Logger.Level
        var message: String
    }

    private let storage = Mutex<[Entry]>([])

    var entries: [Entry] { storage.withLock { $0 } }

    func handler() -> Handler { Handler(records: self) }

    func append(_ entry: Entry) { storage.withLock { $0.append(entry) } }

    struct Handler: LogHandler {
        let records: LogRecords
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            records.append(Entry(level: event.level, message: "\(event.message)"))
        }
    }
}
