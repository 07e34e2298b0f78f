import Foundation
import IsletCore
@testable import IsletEngine
import IsletPostgres
import IsletRender
@testable import IsletStore
import IsletTestSupport
import Logging
import ServiceLifecycle
import Synchronization
import Testing

let t0 = Date(timeIntervalSince1970: 1_700_000_000)
let hour: TimeInterval = 3600
func at(_ seconds: TimeInterval) -> Date { t0.addingTimeInterval(seconds) }

/// What the engine published, in the order it published it.
final class RecordedCommits: EngineMetrics {
    let commits = Mutex<[Commit]>([])

    var events: [EncodedEvent] { commits.withLock { $0.flatMap(\.events) } }
    var effects: Effects {
        commits.withLock { commits in commits.reduce(into: Effects()) { $0.add($1.effects) } }
    }

    func published(_ commit: Commit) { commits.withLock { $0.append(commit) } }
    func subscriberCountChanged(by delta: Int) {}
    func eventCoalesced() {}
    func subscriberOverflowed() {}
}

/// Which store an engine test runs on: the use-case tests run on both (docs/cluster.md).
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgres

    var testDescription: String { rawValue }

    /// The stores this machine can run: PostgreSQL when installed (or required).
    static var available: [StoreKind] { PostgresServer.available ? allCases : [.sqlite] }
}

/// An engine over a real store — an SQLite file in a fresh temporary directory, or a fresh
/// database on a real PostgreSQL — with a hand-moved clock, running its essentials (the store's
/// writer, the fan-out, the bus) — and its timers only when asked, so a test decides when
/// deadlines fire.
final class EngineFixture: Sendable {
    private struct Running: Sendable {
        var engine: Engine
        var store: any Store
        var group: ServiceGroup
        var task: Task<Void, any Error>
    }

    let kind: StoreKind
    let directory: URL
    let clock = ManualClock(now: t0)
    let recorded = RecordedCommits()
    let settings: EngineSettings
    let timers: Bool
    /// The PostgreSQL database's address (nil on SQLite).
    let database: String?
    private let running = Mutex<Running?>(nil)

    var engine: Engine { running.withLock { $0!.engine } }
    var store: any Store { running.withLock { $0!.store } }
    /// The SQLite store, for tests of SQLite itself.
    var sqlite: SQLiteStore { running.withLock { $0!.store as! SQLiteStore } }
    var path: String { directory.appendingPathComponent("islet.sqlite").path }

    private init(kind: StoreKind, settings: EngineSettings, timers: Bool, database: String? = nil) async throws {
        self.kind = kind
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("islet-engine-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        if kind == .postgres, database == nil {
            self.database = try await PostgresServer.newDatabase()
        } else {
            self.database = database
        }
        self.settings = settings
        self.timers = timers
    }

    /// Opens the store (again, after `stop`) and runs the engine, as a starting server would.
    func start(storeOptions: (String) -> StoreOptions = { StoreOptions(location: $0, commitTimeout: .testCommits) }) async throws {
        let store: any Store = if let database {
            try await PostgresStore.open(storeOptions(database))
        } else {
            try SQLiteStore(storeOptions(path))
        }
        var logger = Logger(label: "islet-engine-test")
        logger.logLevel = .warning
        let renderer = Renderer()
        let engine = Engine(
            store: store, settings: settings, clock: clock, metrics: recorded,
            draw: { layout, scope, now in renderer.render(layout, scope: scope, now: now) }, logger: logger
        )
        let group = ServiceGroup(configuration: .init(services: timers ? engine.services : engine.essentials, logger: logger))
        let task = Task { try await group.run() }
        running.withLock { $0 = Running(engine: engine, store: store, group: group, task: task) }
    }

    /// Stops the engine gracefully, as a server that is told to stop.
    func stop() async throws {
        guard let running = running.withLock({ $0 }) else { return }
        await running.group.triggerGracefulShutdown()
        try await running.task.value
        self.running.withLock { $0 = nil }
    }

    /// A second engine, started, on this one's PostgreSQL database: another node of a cluster.
    /// The caller stops it.
    func node() async throws -> EngineFixture {
        let node = try await EngineFixture(kind: kind, settings: settings, timers: false, database: database)
        try await node.start()
        return node
    }

    /// Stops and starts again on the same data.
    func restart() async throws {
        try await stop()
        try await start()
    }

    /// Runs `body` with a started engine holding the `default` device and `apps`, then stops it
    /// and deletes its data.
    ///
    /// - Parameter database: A PostgreSQL database of the test's own (a new one on the shared
    ///   server when nil).
    static func with<T: Sendable>(
        _ kind: StoreKind = .sqlite, rules: LifecycleRules = LifecycleRules(), apps: [BundleID] = ["com.example.bike"],
        timers: Bool = false, database: String? = nil, storeOptions: @escaping (String) -> StoreOptions = { StoreOptions(location: $0, commitTimeout: .testCommits) },
        _ body: (EngineFixture) async throws -> T
    ) async throws -> T {
        var settings = EngineSettings()
        settings.rules = rules
        let fixture = try await EngineFixture(kind: kind, settings: settings, timers: timers, database: database)
        defer { try? FileManager.default.removeItem(at: fixture.directory) }
        try await fixture.start(storeOptions: storeOptions)
        do {
            try await fixture.engine.ensureDefaultDevice()
            for app in apps {
                try await fixture.engine.createApp(App(bundleId: app, name: app, createdAt: t0), keyHash: "hash-\(app)")
            }
            let value = try await body(fixture)
            try await fixture.stop()
            return value
        } catch {
            try? await fixture.stop()
            throw error
        }
    }

    /// Sets the clock, then starts an activity.
    @discardableResult
    func start(_ request: ActivityRequest, bundleId: BundleID = "com.example.bike", at time: Date = t0) async throws -> Activity {
        clock.set(time)
        return try await engine.start(request, bundleId: bundleId).activity
    }

    /// Sets the clock, then applies an input.
    @discardableResult
    func apply(_ input: Activity.Input, to id: ActivityID, owner: BundleID? = nil, at time: Date) async throws -> Outcome {
        clock.set(time)
        return try await engine.apply(input, to: id, owner: owner)
    }
}

func ride(_ speed: Int64, staleDate: Date? = nil, relevance: Double = 0, device: DeviceID = .defaultDevice)
    -> ActivityRequest
{
    ActivityRequest(
        attributesType: "RideAttributes", attributes: ["route": "Loop"],
        content: ActivityContent(state: ["speed": .integer(speed)], staleDate: staleDate, relevanceScore: relevance),
        deviceId: device
    )
}

func update(_ state: JSONValue, timestamp: Date? = nil) -> Activity.Input {
    .update(ContentUpdate(content: ActivityContent(state: state), timestamp: timestamp))
}

func reason(_ body: () async throws -> Void) async -> ErrorReason? {
    do {
        try await body()
        return nil
    } catch let error as IsletError {
        return error.reason
    } catch {
        return nil
    }
}
