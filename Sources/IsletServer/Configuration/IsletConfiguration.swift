import Foundation
import IsletCore
import IsletEngine
import Logging

/// Everything `islet serve` can be told, with a default for every field: zero configuration
/// runs a loopback server with its data in `./.islet`.
///
/// `islet.sample.yaml` lists every key with its default; `IsletConfiguration(reader:)` reads them
/// from flags, `ISLET_*` environment variables and a YAML file.
public struct IsletConfiguration: Equatable, Sendable {
    /// Where the server listens and what it accepts.
    public var server = ServerSettings()
    /// Where data lives and how durably.
    public var store = StoreSettings()
    /// ActivityKit's limits.
    public var lifecycle = LifecycleRules()
    /// Event stream behaviour.
    public var streams = StreamSettings()
    /// The APNs-compatible endpoint.
    public var apns = APNsSettings()
    /// Delivery to real iPhones through Apple's APNs.
    public var delivery = DeliverySettings()
    /// Webhooks to the backend (docs/webhooks.md).
    public var webhooks = WebhookSettings()
    /// Traces exported over OTLP/HTTP (docs/operations.md §1).
    public var telemetry = TelemetrySettings()
    /// The least severe log level written.
    public var logLevel: Logger.Level = .info

    /// The default configuration.
    public init() {}
}

/// Where traces go (docs/operations.md §1).
public struct TelemetrySettings: Equatable, Sendable {
    /// The OTLP/HTTP collector's base address (`http://collector:4318`): spans go to its
    /// `/v1/traces`. `nil`: no tracing, and no cost.
    public var otlpEndpoint: String?

    public init() {}

    /// Refuses an address that is not `http(s)://host[:port]…` with a port from 1 to 65535: the
    /// exporter's HTTP client traps on a port past it, at its first export, seconds after a start
    /// that looked fine. (The `OTEL_*` variables that refine it are checked where the tracer is
    /// made: `TraceSettings`.)
    static func check(_ address: String, source: String) throws(ConfigurationError) {
        guard let url = URL(string: address), ["http", "https"].contains(url.scheme ?? ""), url.host?.isEmpty == false,
            url.port.map({ (1...65535).contains($0) }) ?? true
        else {
            throw ConfigurationError(key: source, problem: "an OTLP/HTTP collector's address is http(s)://host:port, with a port from 1 to 65535; \(address.prefix(200).debugDescription) is not one.")
        }
    }
}

/// Where the server listens and what it accepts.
public struct ServerSettings: Equatable, Sendable {
    /// The address to bind; loopback by default, so nothing is exposed without asking.
    public var host = "127.0.0.1"
    /// The port to bind; 0 picks a free one (the server prints which).
    public var port = 8080
    /// The largest request body accepted, in bytes.
    public var maxBodySize = 64 * 1024
    /// A directory of your own web pages, served at `/pages/` from Islet's origin — so a page
    /// can use `/islet.js` and the API without CORS; `nil` serves none.
    public var pages: String?
    /// A fixed admin key; when unset, one is generated and kept in the data directory.
    public var adminKey: String?
    /// Whether, on a server that listens on loopback only, the display and the console may be
    /// used without a key by pages of their own origin (`KeylessAccess`). Turn it off when a
    /// reverse proxy on this machine forwards other machines' requests to Islet: they would
    /// arrive from loopback too.
    public var keylessLoopback = true
    /// The most connections served at once; more are answered `503 unavailable` and closed.
    /// `nil` derives it from the process's descriptor limit (`ConnectionBudget`).
    public var maxConnections: Int?
    /// How long a new connection may take to send its first request head, in seconds.
    public var requestHeadTimeout: TimeInterval = 10
    /// How long a request body may take once its head has arrived, in seconds, before
    /// `minBodyRate` applies: the body must then average at least that rate since its head.
    public var requestBodyTimeout: TimeInterval = 20
    /// The slowest average rate a request body may arrive at after `requestBodyTimeout`, in
    /// bytes per second: each `minBodyRate` bytes received extend the body's deadline by a second.
    public var minBodyRate = 500
    /// How long a connection may stay open between a response and the next request's head,
    /// in seconds. Longer than a client's own (AsyncHTTPClient's, IsletKit's: 60 s), so the
    /// client lets an idle connection go first: at the same length, a client could send on a
    /// connection the server was closing, and meet a reset.
    public var idleTimeout: TimeInterval = 75
    /// How long a client may take none of the bytes the server has waiting for it, in seconds,
    /// before its connection is closed: a client that stops reading holds no connection for long.
    public var writeTimeout: TimeInterval = 30
    /// How long a graceful shutdown (SIGTERM, SIGINT) waits for answers in flight, in seconds,
    /// before it closes the connections still open and the process exits.
    public var shutdownTimeout: TimeInterval = 10
    /// Whether an activity's update, end and push token, and the APNs endpoint's device pushes,
    /// are served on their connection's event loop, with no task (docs/engine.md §9.1); off,
    /// every request takes its route in a task. The answers are the same either way: the switch
    /// is there to measure one against the other.
    public var hotRoutes = true

    /// The defaults.
    public init() {}

    /// Whether only this machine can connect. Only a loopback address or `localhost` counts; a
    /// host name that merely starts with `127.` does not.
    public var listensOnLoopbackOnly: Bool {
        KeylessAccess.Authority.isLoopbackName(host)
    }

    /// Whether a request without a key may act as a display or the console (under
    /// `KeylessAccess`'s rules): on a server that listens on loopback only, unless
    /// `keylessLoopback` is off.
    public var allowsKeylessAccess: Bool {
        listensOnLoopbackOnly && keylessLoopback
    }
}

/// Where data lives and how durably.
public struct StoreSettings: Equatable, Sendable {
    /// The data directory: the SQLite database, the admin key and the lock file.
    public var dataDirectory = ".islet"
    /// A PostgreSQL database shared by several nodes (`postgres://user@host:port/database`),
    /// instead of SQLite in the data directory; `nil` for SQLite (docs/cluster.md).
    public var database: String?
    /// How hard each commit waits for the disk.
    public var durability = Durability.full
    /// How long dismissed activities and events are kept.
    public var retention: TimeInterval = 7 * 86_400
    /// How long a change waits for PostgreSQL to confirm its commit before it is answered
    /// `503` with what the database waits for (docs/cluster.md, "Commits the database holds").
    public var commitTimeout: TimeInterval = 10

    /// The defaults.
    public init() {}

    /// Where the store is: the PostgreSQL address when one is set, else the SQLite file.
    public var location: String { database ?? databasePath }
    /// The database file inside the data directory.
    public var databasePath: String { (dataDirectory as NSString).appendingPathComponent("islet.sqlite") }
    /// The admin key file inside the data directory.
    public var adminKeyPath: String { (dataDirectory as NSString).appendingPathComponent("admin.key") }
    /// Where the development TLS certificate of the APNs endpoint lives.
    public var tlsDirectory: String { (dataDirectory as NSString).appendingPathComponent("tls") }
}

/// The APNs-compatible endpoint: HTTP/2 over TLS on its own port.
public struct APNsSettings: Equatable, Sendable {
    /// Whether the endpoint runs.
    public var enabled = true
    /// The address to bind; `nil` means the same as `server.host`.
    public var host: String?
    /// The port; Apple's alternative port by default. 0 picks a free one.
    public var port = 2197
    /// A PEM certificate chain to present instead of the generated development one.
    public var certificate: String?
    /// The PEM private key of `certificate`.
    public var privateKey: String?
    /// How often every push token and push-to-start token is replaced, so providers can test
    /// their token handling; 0 never.
    public var tokenRotation: TimeInterval = 0
    /// The most broadcast channels one app may hold. Apple: 10,000.
    public var maxChannelsPerApp = 10_000
    /// The most connections served at once; more are closed as they arrive. `nil` derives it
    /// from the process's descriptor limit (`ConnectionBudget`).
    public var maxConnections: Int?
    /// How long a new connection may take, in seconds, to finish TLS, send the HTTP/2 preface
    /// and open its first stream.
    public var firstRequestTimeout: TimeInterval = 10
    /// How long one stream may take from its HEADERS to its end — its request received and its
    /// answer delivered — in seconds, before the stream is reset.
    public var requestTimeout: TimeInterval = 10
    /// How long a connection may go without an answer delivered, in seconds; streams in flight
    /// put it off unless one of them was reset by `requestTimeout`. Providers keep APNs
    /// connections open for hours.
    public var idleTimeout: TimeInterval = 3600
    /// Apple's failures played on purpose: the share of pushes answered with each. None by default.
    public var faults = APNsFaults()
    /// Pushes a minute to one token beyond which it answers `429 TooManyRequests` (Apple
    /// documents no number); 0, the default, sets no limit.
    public var tokenRateLimit = 0
    /// How often a connection's provider token may change before `429
    /// TooManyProviderTokenUpdates` (Apple: once every 20 minutes); 0 never checks.
    public var providerTokenInterval: TimeInterval = 1200

    /// The defaults.
    public init() {}
}
