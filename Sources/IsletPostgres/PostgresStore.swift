import Foundation
import IsletCore
import IsletEngine
import IsletSQL
import Logging
import NIOPosix
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// The engine's `Store` on PostgreSQL, for several Islet nodes sharing one database
/// (docs/cluster.md).
///
/// - Changes run as READ COMMITTED transactions, several changes to one, each in its own
///   savepoint, on threads of the store's own (the use cases are synchronous), taking row locks
///   on what they decide on (`PostgresWriter`).
/// - Events are numbered at commit, so ids become visible in increasing order, and every
///   node's events reach this node's engine through its tail (`EventTail`), in id order.
/// - Commits wait for the disk (`synchronous_commit = on`): an acknowledged change survives the
///   node that took it. A commit the database does not confirm within `store.commitTimeout` (a
///   synchronous standby that is not there) is answered 503 with why (`CommitWatch`).
public final class PostgresStore: Store {
    public let commits = CommitLog()
    /// Several nodes write to the database: claims are given back when their lease runs out.
    public let isShared = true
    /// Where the database is, without its password.
    public let address: String
    public let kind = "postgresql"
    public var location: String { address }
    public var changesRunAgain: Int { writer.contention.load(ordering: .relaxed) }
    public var eventReads: [String: Int] {
        Dictionary(uniqueKeysWithValues: tail.readCounts.map { ($0.key.rawValue, $0.value) })
    }

    /// The host the store works with now and postgres-nio's pool for it (docs/cluster.md §7).
    private let route: Route
    /// The current route: the pool every connection comes from, and its generation.
    var currentRoute: Route.Current { route.current }
    /// The statements prepared on each pooled connection.
    let prepared = PreparedStatements()
    let threads: NIOThreadPool
    let logger: Logger
    private let writer: PostgresWriter
    let tail: EventTail
    private let health: WriteHealth
    private let node = UUID().uuidString.lowercased()
    /// A probe write is out (`checkWrites`): one at a time, however often the health is asked.
    private let probing = Atomic<Bool>(false)

    /// How long a change or a read waits for a connection when the database cannot be reached,
    /// before it is answered `unavailable`, when the address gives no `connect_timeout` (which
    /// then bounds this wait too: the operator's word on how long the database may take).
    static let connectionWait: Duration = .seconds(5)
    /// How long it waits while the database is known to be failing (the last write found it
    /// gone): a node answers 503 at once in an outage, and a busy but healthy one is given time.
    static let failingConnectionWait: Duration = .seconds(1)
    /// Write transactions a node runs at once by default: while one lane waits for its round
    /// trips or its commit, the others work; more lanes make smaller batches, each with its
    /// commit, so more CPU per change on a database this close (BENCHMARKS.md).
    static let writerLanes = 4
    /// The most lanes a node runs, with a pool that large: a database across a network keeps
    /// more transactions in flight to hide its round trips (`pool_size`, docs/cluster.md).
    static let maximumLanes = 16
    /// Reads a node runs at once (each holds a connection and a thread while it runs).
    static let readers = 4

    /// The pool's settings for the one host of `address`.
    static func pool(for address: PostgresAddress) throws(IsletError) -> PostgresClient.Configuration {
        var configuration = try address.clientConfiguration(poolSize: Self.poolSize, connectTimeout: Self.connectionWait)
        // An acknowledged change is on the server's disk (the default; said, not assumed), and on
        // a synchronous standby's when the server names one.
        configuration.options.additionalStartupParameters.append(("synchronous_commit", Self.synchronousCommit))
        // None kept open for its own sake: connections are made as changes and reads ask. With
        // a minimum, postgres-nio 1.33's pool trapped (a precondition, in release builds too)
        // when a change asked for a connection while a database outage had left fewer open
        // than the minimum — a node died in the outage test, one run in three under load.
        configuration.options.minimumConnections = 0
        return configuration
    }

    /// Every session's `synchronous_commit`.
    static let synchronousCommit = "on"

    /// Connections a node opens when the address gives no `pool_size`: one per writer lane and
    /// reader, the tail's LISTEN and its reads.
    static let poolSize = writerLanes + readers + 2

    /// The writer lanes a pool of `poolSize` connections keeps busy: what is left after the
    /// readers, the tail's LISTEN and its reads; at least one, at most `maximumLanes`.
    static func lanes(poolSize: Int) -> Int {
        max(1, min(maximumLanes, poolSize - readers - 2))
    }

    /// This node's writer lanes.
    private let lanes: Int
    /// How long a change or a read waits for a connection (`connectionWait`, or the address's `connect_timeout`).
    private let connectionWait: Duration

    private init(
        given: PostgresAddress, address: PostgresAddress, location: String, commitTimeout: Duration,
        onWriteHealth: @escaping @Sendable (WriteFailure?) -> Void, logger: Logger
    ) throws(IsletError) {
        let configuration = try Self.pool(for: address)
        connectionWait = address.connectTimeout ?? Self.connectionWait
        lanes = Self.lanes(poolSize: configuration.options.maximumConnections)
        self.address = location
        self.logger = logger
        self.route = Route(given: given, chosen: address, client: PostgresClient(configuration: configuration, backgroundLogger: logger))
        self.threads = NIOThreadPool(numberOfThreads: lanes + Self.readers)
        let health = WriteHealth(storageFailure: PostgresFailure.storageFailure, changed: onWriteHealth)
        self.health = health
        self.tail = EventTail(log: commits, logger: logger)
        // Held commits make the health fail through the changes they answer; confirmed, it recovers.
        self.writer = PostgresWriter(watch: CommitWatch(limit: commitTimeout) { held in
            if held == nil { health.succeeded() }
        })
    }

    /// Opens the store: reaches the database, brings its schema up to date (`migrate`), and
    /// starts reading events from the newest.
    ///
    /// - Throws: `unavailable` when the database cannot be reached or refuses the connection;
    ///   `invalidRequest` for a bad address, an `sslrootcert` that cannot be read, or a database
    ///   migrated by a newer Islet.
    public static func open(_ options: StoreOptions, logger: Logger = Logger(label: "islet.postgres")) async throws -> PostgresStore {
        let given = try PostgresAddress(options.location)
        // A multi-host address: the host that fits target_session_attrs (docs/cluster.md §7).
        let address = try await HostSelector.choose(given, connectTimeout: given.connectTimeout ?? Self.connectionWait, logger: logger)
        try await PostgresMigrator.migrate(address, logger: logger)
        // On a connection of its own: the pool runs only inside `run()`, with the store.
        let last: Int64
        do {
            let connection = try await address.connect(connectTimeout: Self.connectionWait, logger: logger)
            // Closed before it is let go of, on either path (postgres-nio asserts it).
            do {
                // Under the events lock, exclusively: every transaction that drew an id before
                // has ended, so none below the newest visible one comes later (`EventTail`).
                _ = try await connection.run("BEGIN", logger: logger).get()
                _ = try await connection.run("SELECT pg_advisory_xact_lock(\(PostgresWriter.eventsLock))", logger: logger).get()
                last = try await connection.run("SELECT COALESCE(MAX(id), 0) FROM event", logger: logger).get().rows.first?.decode(Int64.self) ?? 0
                _ = try await connection.run("COMMIT", logger: logger).get()
                try? await connection.close()
            } catch {
                try? await connection.close()
                throw error
            }
        } catch {
            throw answer(error)
        }
        let store = try PostgresStore(
            given: given, address: address, location: given.redacted, commitTimeout: options.commitTimeout,
            onWriteHealth: options.onWriteHealth, logger: logger
        )
        store.tail.start(after: last)
        store.threads.start()
        return store
    }

    /// Stops the threads (after `run` returned).
    func close() async {
        try? await threads.shutdownGracefully()
    }

    // MARK: Store

    public func write<T: Sendable>(
        now: Date, about activity: ActivityID?, _ work: @escaping @Sendable (any Transaction) throws -> T
    ) async throws -> Committed<T> {
        do {
            let committed = try await writer.write(now: now, about: activity, work)
            health.succeeded()
            return committed
        } catch {
            health.failed(error)
            throw Self.answer(error)
        }
    }

    public func read<T: Sendable>(_ work: @escaping @Sendable (any StoreReading) throws -> T) async throws -> T {
        do {
            return try await withConnection { connection in
                let logger = self.logger
                return try await self.threads.runIfActive {
                    let session = PostgresSession(connection: connection, logger: logger, prepared: self.prepared)
                    // Events are read no further than the tail published: an id above it may
                    // have one below it still to come.
                    session.eventHorizon = self.tail.position
                    return try work(SQLSnapshot(session: session))
                }
            }
        } catch {
            throw Self.answer(error)
        }
    }

    /// The probe write, when writes have failed or none succeeded for `quietInterval`: as long
    /// as a change waits for its commit at most (`store.commitTimeout`), one probe at a time, so
    /// that a health check never holds another connection where commits are held.
    public func checkWrites(quietInterval: Duration) async -> WriteFailure? {
        guard health.current != nil || health.quiet(for: quietInterval) else { return nil }
        if let held = writer.watch.held { return health.current ?? WriteFailure(since: held.since, message: held.description) }
        guard probing.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else { return health.current }
        let number = writer.watch.begin([])
        let probed = try? await waitAtMost(writer.watch.limit, cancellingLateWork: false) { () -> Result<Void, any Error> in
            defer {
                self.writer.watch.end(number)
                self.probing.store(false, ordering: .relaxed)
            }
            do {
                _ = try await self.withConnection { connection in
                    try await connection.run(
                        """
                        INSERT INTO writeProbe (node, at) VALUES (\(self.node), \(Date().timeIntervalSince1970))
                        ON CONFLICT (node) DO UPDATE SET at = excluded.at
                        """,
                        logger: self.logger
                    ).get()
                }
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        switch probed {
        case .success?:
            health.succeeded()
            return nil
        case .failure(let error)?:
            health.failed(error)
            return health.current ?? WriteFailure(since: Date(), message: "\(error)")
        case nil:
            // The database holds the probe's commit, as it would a change's.
            _ = writer.watch.overdue(number)
            let wait = await whyCommitsWait()
            let unconfirmed = CommitUnconfirmed(since: Date(), limit: writer.watch.limit, reason: wait.reason)
            health.failed(wait.forStandby ? writer.watch.hold(unconfirmed) ?? unconfirmed : unconfirmed)
            return health.current ?? WriteFailure(since: unconfirmed.since, message: unconfirmed.description)
        }
    }

    /// What the database's commits wait for, as `pg_stat_activity` says, asked on a connection
    /// of the pool's (at most 2 s): a synchronous standby that is not there (`forStandby`), or
    /// the wait events of the sessions still running.
    func whyCommitsWait() async -> (reason: String, forStandby: Bool) {
        let asked = try? await waitAtMost(.seconds(2)) {
            try await self.withConnection { connection -> (String, Bool) in
                let rows = try await connection.query(
                    """
                    SELECT (SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep' AND datname = current_database()),
                        current_setting('synchronous_standby_names'),
                        (SELECT count(*) FROM pg_stat_replication),
                        (SELECT string_agg(DISTINCT wait_event_type || ' ' || wait_event, ', ') FROM pg_stat_activity
                            WHERE datname = current_database() AND state = 'active' AND wait_event IS NOT NULL AND pid <> pg_backend_pid())
                    """,
                    logger: self.logger
                ).collect()
                guard let row = rows.first else { return ("PostgreSQL did not say why", false) }
                let (syncRep, names, standbys, waits) = try row.decode((Int64, String, Int64, String?).self)
                return (Self.whyCommitsWait(syncRep: syncRep, synchronousStandbyNames: names, standbys: standbys, waits: waits), syncRep > 0)
            }
        }
        return (asked ?? nil) ?? ("PostgreSQL did not say why within 2 s", false)
    }

    /// What `whyCommitsWait` says of what it read.
    static func whyCommitsWait(syncRep: Int64, synchronousStandbyNames names: String, standbys: Int64, waits: String?) -> String {
        if syncRep > 0 {
            let connected = standbys == 0 ? "no standby is connected" : "\(standbys) standby\(standbys == 1 ? " is" : "s are") connected"
            return "commits are waiting for a synchronous standby: \(syncRep) session\(syncRep == 1 ? "" : "s") wait in SyncRep, "
                + "synchronous_standby_names is '\(names)' and \(connected)"
        }
        if let waits { return "the database's sessions wait (\(waits))" }
        return "PostgreSQL did not say why"
    }

    /// Runs the connection pool, the tail and the writer lanes until a graceful shutdown (or
    /// cancellation), then stops them in that order's reverse: the lanes finish what was
    /// queued, the tail publishes what they committed, and the pool closes last.
    public func run() async throws {
        await withDiscardingTaskGroup { pool in
            // postgres-nio's pool runs as long as this task does: a read or a write made before
            // it waits for it. After a failover, the pool of the host chosen next.
            pool.addTask { await self.runRoutes() }
            await withGracefulShutdownHandler {
                await withTaskCancellationHandler {
                    await withDiscardingTaskGroup { group in
                        group.addTask { await self.tail.run(store: self) }
                        await withDiscardingTaskGroup { lanes in
                            for _ in 0..<self.lanes {
                                lanes.addTask { await self.writer.runLane(store: self) }
                            }
                        }
                        // The writers finished what was queued; what they committed is published.
                        self.tail.stop()
                    }
                } onCancel: {
                    self.writer.stop()
                }
            } onGracefulShutdown: {
                self.writer.stop()
            }
            pool.cancelAll()
        }
        await close()
    }

    // MARK: Connections

    /// Runs the current route's pool until the store stops — or, for a multi-host address,
    /// until its host is reported lost (`hostLost`): then chooses a host again, every half
    /// second until one fits (requests meanwhile are answered `unavailable`), and runs a pool
    /// for it (docs/cluster.md §7).
    private func runRoutes() async {
        while !Task.isCancelled {
            let current = route.current
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await current.client.run() }
                group.addTask { await self.route.waitForLoss(of: current.generation) }
                await group.next()
                group.cancelAll()
            }
            guard !Task.isCancelled else { return }
            let lost = current.endpoint
            var next: PostgresAddress?
            while next == nil, !Task.isCancelled {
                do {
                    next = try await HostSelector.choose(route.given, connectTimeout: connectionWait, logger: logger)
                } catch {
                    logger.warning("No PostgreSQL host fits yet; trying again", metadata: ["lost": "\(lost)", "error": "\(error)"])
                    try? await Task.sleep(for: .milliseconds(500))
                }
            }
            guard let next, !Task.isCancelled else { return }
            do {
                try route.move(to: next, backgroundLogger: logger)
                logger.notice("Moved to another PostgreSQL host", metadata: ["from": "\(lost)", "to": "\(next.endpoints[0])"])
            } catch {
                logger.error("Cannot configure the PostgreSQL host chosen", metadata: ["error": "\(error)"])
                return
            }
        }
    }

    /// What a failover keeps, asked of the current host: after a switch, the promoted standby's
    /// settings (often no standby of its own yet), and a `synchronous_standby_names` changed at
    /// run time (Patroni's synchronous mode does) at the next ask.
    public func replication() async throws -> Replication? {
        let standbys = try await withConnection { connection in
            try await connection.query("SHOW synchronous_standby_names", logger: self.logger).collect().first?.decode(String.self) ?? ""
        }
        return Replication(synchronousCommit: Self.synchronousCommit, synchronousStandbyNames: standbys)
    }

    /// Reports a failure that says the host is gone or cannot take writes, on the route of
    /// `generation`: a multi-host address then moves to the host that fits (`runRoutes`).
    func hostLost(_ error: any Error, generation: Int) {
        guard route.given.endpoints.count > 1, PostgresFailure.losesHost(error) else { return }
        route.lose(generation)
    }

    /// Runs `body` with a pooled connection, waiting at most `connectionWait` for one
    /// (`failingConnectionWait` while writes are failing).
    ///
    /// Only the wait is bounded, never `body`: a change that has begun is never abandoned —
    /// answered `unavailable` while it goes on to commit. Whichever comes first, the connection
    /// or the end of the wait, decides, and the other then does nothing.
    func withConnection<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        let wait = health.current == nil ? connectionWait : Self.failingConnectionWait
        let unavailable = PostgresUnavailable(reason: "PostgreSQL at \(address) did not give a connection within \(wait)")
        let lease = LeaseRace()
        let current = route.current
        do {
            return try await race(current.client, wait: wait, unavailable: unavailable, lease, body)
        } catch {
            // The route's pool shuts down once its host is said lost: what waited on it, or came
            // after, is answered as the database's being away is, and tried again on the next.
            if route.hasLost(current.generation) {
                throw PostgresUnavailable(reason: "PostgreSQL at \(current.endpoint) is gone; the node is moving to the host that fits (docs/cluster.md §7)")
            }
            hostLost(error, generation: current.generation)
            throw error
        }
    }

    /// The race of `withConnection`, on `client`.
    private func race<T: Sendable>(
        _ client: PostgresClient, wait: Duration, unavailable: PostgresUnavailable, _ lease: LeaseRace,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                try await client.withConnection { connection in
                    guard lease.decide(.leased) else {
                        throw unavailable
                    }
                    return try await body(connection)
                }
            }
            group.addTask {
                try? await Task.sleep(for: wait)
                if lease.decide(.gaveUp) {
                    throw unavailable
                }
                return nil
            }
            while let result = try await group.next() {
                if let value = result {
                    group.cancelAll()
                    return value
                }
            }
            throw unavailable
        }
    }

    /// A failure of the database itself reaches the caller as `unavailable` — the request was
    /// fine, the server cannot serve it now — and the rest as they were thrown.
    static func answer(_ error: any Error) -> any Error {
        if let unconfirmed = error as? CommitUnconfirmed { return IsletError(.unavailable, unconfirmed.message) }
        if let failure = PostgresFailure.storageFailure(error) {
            return IsletError(.unavailable, "The store cannot be reached now: \(failure). Nothing was changed; try again.")
        }
        // postgres-nio hides what the server said from a plain description; the log needs it.
        if let error = error as? PSQLError {
            return PostgresStatementError(description: "PostgreSQL: \(PostgresMigrator.describe(error)) (\(error.serverInfo?[.sqlState] ?? "\(error.code)"))")
        }
        if let state = PostgresFailure.sqlState(error) {
            return PostgresStatementError(description: "PostgreSQL: \(PostgresFailure.serverMessage(error) ?? "an error") (\(state))")
        }
        return error
    }
}

/// `withConnection`'s race between the connection and the end of the wait: the first to
/// `decide` wins.
private final class LeaseRace: Sendable {
    enum Outcome { case leased, gaveUp }
    private let outcome = Mutex<Outcome?>(nil)

    /// True when `claim` is the outcome: nothing was decided before.
    func decide(_ claim: Outcome) -> Bool {
        outcome.withLock { outcome in
            guard outcome == nil else { return false }
            outcome = claim
            return true
        }
    }
}

/// A statement PostgreSQL refused, as the server said it: a bug to see in the log (the client
/// is answered 500 without it).
struct PostgresStatementError: Error, CustomStringConvertible {
    let description: String
}

/// The host a store works with, its pool, and which route this is (docs/cluster.md §7): a
/// failure reported on an older route than the current one changes nothing, so one failover
/// is one move however many lanes see it.
final class Route: Sendable {
    struct Current: Sendable {
        let client: PostgresClient
        let endpoint: PostgresAddress.Endpoint
        let generation: Int
    }

    /// The address as given: every host, and `target_session_attrs`.
    let given: PostgresAddress
    private let state: Mutex<(current: Current, lost: Int?)>
    private let losses = AsyncStream<Int>.makeStream(bufferingPolicy: .bufferingNewest(8))

    init(given: PostgresAddress, chosen: PostgresAddress, client: PostgresClient) {
        self.given = given
        state = Mutex((Current(client: client, endpoint: chosen.endpoints[0], generation: 0), nil))
    }

    var current: Current { state.withLock { $0.current } }

    /// Says the route of `generation` lost its host, once.
    func lose(_ generation: Int) {
        let first = state.withLock { state -> Bool in
            guard state.current.generation == generation, state.lost != generation else { return false }
            state.lost = generation
            return true
        }
        if first { losses.continuation.yield(generation) }
    }

    /// Whether the route of `generation` was said lost: its pool is shutting down, or a newer
    /// route is current.
    func hasLost(_ generation: Int) -> Bool {
        state.withLock { $0.current.generation != generation || $0.lost == generation }
    }

    /// Returns once the route of `generation` is said lost (or the task is cancelled).
    func waitForLoss(of generation: Int) async {
        for await lost in losses.stream where lost >= generation { return }
    }

    /// Makes the route to `address`'s one host current, with a pool of its own.
    func move(to address: PostgresAddress, backgroundLogger logger: Logger) throws(IsletError) {
        let client = PostgresClient(configuration: try PostgresStore.pool(for: address), backgroundLogger: logger)
        state.withLock { state in
            state.current = Current(client: client, endpoint: address.endpoints[0], generation: state.current.generation + 1)
        }
    }
}
