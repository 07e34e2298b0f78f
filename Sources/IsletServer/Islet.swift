import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import IsletAPNs
import IsletCore
import IsletEngine
import IsletRender
import IsletWebhooks
import Logging
import NIOCore
import ServiceLifecycle
import UnixSignals

/// Which of the server's listeners started.
public enum Endpoint: Sendable, Hashable {
    /// The REST API, the event streams and the web display: HTTP/1.1.
    case http
    /// The APNs-compatible endpoint: HTTP/2 over TLS.
    case apns
}

/// One Islet server: its store, engine, event bus, timers and HTTP application, wired together.
///
/// `islet serve` builds one and runs `application`; tests build one on port 0 with a
/// `ManualClock` and drive it through real HTTP.
public struct Islet: Sendable {
    /// Islet's version.
    public static let version = "0.1.0"

    /// The configuration it runs with.
    public let configuration: IsletConfiguration
    /// The engine: every change goes through it.
    public let engine: Engine
    /// Its metrics registry.
    public let metrics: ServerMetrics
    /// The admin key: from the configuration, or the one kept in the data directory.
    public let adminKey: String
    /// Where the admin key is kept, when it comes from the data directory.
    public let adminKeyPath: String?
    /// The certificate authority a provider trusts to reach the APNs endpoint, when Islet made
    /// its certificate.
    public let authorityPath: String?
    /// Every route the REST listener answers, as `GET /v1/apps/{bundleId}`: what the OpenAPI
    /// document (`GET /openapi.json`) describes, and a test holds it to.
    public let routes: [String]
    /// Every route the APNs endpoint answers (none when it is off), as `POST /3/device/{token}`:
    /// what docs/security.md's table of the APNs port lists, and a test holds it to.
    public let apnsRoutes: [String]
    /// The HTTP application, with the bus, the deadline scheduler and history retention as its
    /// services. Run it with `runService()`.
    public let application: Application<RouterResponder<IsletRequestContext>>
    /// Both ports' connections, for a shutdown that has waited long enough.
    private let connections: [ConnectionCap]
    private let logger: Logger
    private let lock: DataDirectoryLock

    /// The server as a service, as `run` runs it: the application, its graceful shutdown bounded
    /// by `server.shutdownTimeout`, after which the connections still open are closed
    /// (`ShutdownDeadline`). A program (or a test) that runs the server in a service group of
    /// its own runs this, so that a client that never reads cannot hold its shutdown for ever.
    public var service: any Service {
        ShutdownDeadline(
            service: application, timeout: .seconds(configuration.server.shutdownTimeout), connections: connections, logger: logger
        )
    }

    /// Runs the server until SIGTERM or SIGINT, then shuts down gracefully: streams end, the
    /// timers stop, and in-flight requests finish — for at most `server.shutdownTimeout`, after
    /// which the connections still open are closed (`ShutdownDeadline`).
    ///
    /// - Parameter telemetry: Services that outlive the server: they stop after it, so the spans
    ///   of its last requests are still exported (the tracer's).
    public func run(telemetry: [any Service] = []) async throws {
        // A group stops its services in the reverse of their order.
        let group = ServiceGroup(configuration: .init(
            services: telemetry + [service], gracefulShutdownSignals: [.sigterm, .sigint], logger: application.logger
        ))
        do {
            try await group.run()
        } catch {
            let server = configuration.server
            throw AddressInUse.from(
                error, listener: "The REST API", address: "\(server.host):\(server.port)", setting: "--port or server.port"
            )
        }
    }

    /// Opens the data directory (creating it), the store and the admin key, and builds the server.
    ///
    /// - Parameters:
    ///   - configuration: What to run.
    ///   - clock: The time source; the system clock unless a test moves time by hand.
    ///   - logger: Where logs go.
    ///   - openStore: Opens the store in the data directory: the composition root's choice (the
    ///     `islet` command opens SQLite), so the server never names a store.
    ///   - openTransport: Makes what sends deliveries to Apple and Google: the composition root's
    ///     choice too (the `islet` command hands IsletDelivery's `PushServiceTransport`).
    ///   - webhookTransport: What sends webhooks (the `islet` command hands IsletWebhooks'
    ///     `HTTPWebhookTransport`); without one, none are sent.
    ///   - onListening: Called with each listener and its bound port once it listens.
    public init(
        configuration: IsletConfiguration, clock: any WallClock = SystemClock(), logger: Logger, openStore: StoreOpener,
        openTransport: TransportOpener, webhookTransport: (any WebhookTransport)? = nil, onListening: @escaping @Sendable (Endpoint, Int) async -> Void = { _, _ in }
    ) async throws {
        let logger = logger.guarded()
        let settings = configuration.store
        try DataDirectoryLock.createDirectory(settings.dataDirectory)
        lock = try DataDirectoryLock(directory: settings.dataDirectory)

        let metrics = ServerMetrics()
        let storeOptions = StoreOptions(
            location: settings.location, durability: settings.durability, commitTimeout: .milliseconds(Int64(settings.commitTimeout * 1000)),
            onWriteHealth: { failure in
                if let failure {
                    logger.error("Writes to the store are failing; changes are refused with 503 unavailable until they succeed", metadata: ["reason": "\(failure.message)"])
                } else {
                    logger.notice("Writes to the store succeed again")
                }
            }
        )
        var engineSettings = EngineSettings()
        engineSettings.rules = configuration.lifecycle
        engineSettings.streams = configuration.streams
        engineSettings.retention = settings.retention
        engineSettings.tokenRotation = configuration.apns.tokenRotation
        engineSettings.delivery = configuration.delivery
        engineSettings.delivery.waitsForListener = true
        engineSettings.webhooks = configuration.webhooks
        let renderer = Renderer { name in
            logger.notice("A layout names an icon Islet does not have; drawing a placeholder", metadata: ["systemName": "\(name)"])
        }
        if settings.database != nil, configuration.server.adminKey == nil {
            throw ConfigurationError(
                key: "server.adminKey",
                problem: "several nodes share the database, so each must be given the same admin key (ISLET_SERVER_ADMIN_KEY); "
                    + "a key of its own in each data directory would replace the others' at every start."
            )
        }
        let store = try await openStore(storeOptions)
        // `islet webhooks listen` sessions are served here, beside the transport's own endpoints.
        let webhooks = webhookTransport.map { RoutedWebhookTransport(listeners: WebhookListeners(), others: $0) }
        let engine = Engine(
            store: store, settings: engineSettings, clock: clock, metrics: metrics,
            draw: { layout, scope, now in renderer.render(layout, scope: scope, now: now) },
            transport: openTransport(TransportOptions(
                timeout: .milliseconds(Int64(engineSettings.delivery.requestTimeout * 1000)), connections: engineSettings.delivery.connections,
                logger: logger
            )), webhookTransport: webhooks, logger: logger
        )

        let (adminKey, adminKeyPath) = try AdminKey.resolve(configuration: configuration)
        let keys = KeyRing(engine: engine)
        let budget = ConnectionBudget.current()
        let httpCap = ConnectionCap(
            limit: configuration.server.maxConnections ?? budget.http, refusalSlots: ConnectionBudget.refusalSlots
        )
        let router = Router(context: IsletRequestContext.self)
        let webSocketRouter = Router(context: IsletRequestContext.self)
        webSocketRouter.add(middleware: ErrorMiddleware())
        let routeTable = RouteTable()
        router.add(middleware: ErrorMiddleware(routes: routeTable))
        if let pages = configuration.server.pages {
            // Your own pages, from Islet's origin: no key needed to read them, as the display's;
            // `/pages/` is a directory's index, so this comes before the API's path rules.
            router.add(middleware: FileMiddleware(pages, urlBasePath: "/pages", searchForIndexHtml: true, logger: logger))
        }
        let authentication = Authentication(keys: keys, keylessAllowed: configuration.server.allowsKeylessAccess)
        // With tracing on (docs/operations.md §1), a span per request, refused ones too, around
        // the checks, so their log line carries its trace id. Off, no middleware: a request then
        // has no trace context, and the engine makes no span (nothing to measure).
        if configuration.telemetry.otlpEndpoint != nil {
            router.add(middleware: TracingMiddleware())
        }
        router.add(middleware: RequestChecks(
            knownQueries: KnownQueries(openAPI: EmbeddedFiles.files["openapi.json"]), authentication: authentication,
            idempotency: IdempotencyGate(engine: engine, maxBodySize: configuration.server.maxBodySize)
        ))
        router.add(middleware: MetricsMiddleware())
        let maxBodySize = configuration.server.maxBodySize
        OperationsRoutes(engine: engine, metrics: metrics, startedAt: clock.now()).add(to: router)
        AppRoutes(engine: engine, keys: keys, maxBodySize: maxBodySize).add(to: router)
        ActivityRoutes(engine: engine, maxBodySize: maxBodySize).add(to: router)
        EventRoutes(engine: engine, settings: configuration.streams, authentication: authentication)
            .add(to: router, webSocketRouter: webSocketRouter)
        LayoutRoutes(engine: engine).add(to: router)
        UserRoutes(engine: engine, maxBodySize: maxBodySize).add(to: router)
        SendRoutes(engine: engine, maxBodySize: maxBodySize).add(to: router)
        InstallationRoutes(engine: engine, keys: keys).add(to: router)
        WebhookRoutes(
            engine: engine, maxBodySize: configuration.server.maxBodySize,
            // A node that sends no webhooks serves no listening session: nothing would come down it.
            listeners: configuration.webhooks.enabled ? webhooks?.listeners : nil, authentication: authentication, logger: logger
        ).add(to: router, webSocketRouter: webSocketRouter)
        DisplayRoutes(engine: engine).add(to: router)

        var services = engine.services
        let verifier = ProviderTokenVerifier(cacheLifetime: store.isShared ? Engine.sharedStaleness : nil)
        engine.observeEffects { effects in
            if effects.providerKeysChanged { verifier.forget() }
        }
        PushRoutes(engine: engine, apns: configuration.apns, maxBodySize: maxBodySize).add(to: router)
        DeliveryRoutes(engine: engine, maxBodySize: maxBodySize).add(to: router)
        let pushAddress = PushAddress()
        AndroidRoutes(engine: engine, maxBodySize: maxBodySize, pushAddress: pushAddress).add(to: router)
        var authorityPath: String?
        var apnsRoutes: [String] = []
        var connections = [httpCap]
        let apnsRequests = configuration.apns.enabled ? APNsRequestLog() : nil
        ConsoleRoutes(engine: engine, apnsRequests: apnsRequests).add(to: router)
        if let apnsRequests {
            let apnsCap = ConnectionCap(limit: configuration.apns.maxConnections ?? budget.apns, refusalSlots: 0)
            connections.append(apnsCap)
            let (endpoint, identity, routes) = try Self.apnsEndpoint(
                engine: engine, verifier: verifier, configuration: configuration, cap: apnsCap, requests: apnsRequests,
                logger: logger, onListening: { [configuration] endpoint, port in
                    pushAddress.listening(host: configuration.apns.host ?? configuration.server.host, port: port)
                    await onListening(endpoint, port)
                }
            )
            let apns = configuration.apns
            services.append(Listener(
                service: endpoint, listener: "The APNs endpoint", address: "\(apns.host ?? configuration.server.host):\(apns.port)",
                setting: "apns.port (ISLET_APNS_PORT), or turn it off with apns.enabled: false"
            ))
            authorityPath = identity.authorityPath
            apnsRoutes = routes
        }

        self.configuration = configuration
        self.engine = engine
        self.metrics = metrics
        self.adminKey = adminKey
        self.adminKeyPath = adminKeyPath
        self.authorityPath = authorityPath
        self.connections = connections
        self.logger = logger
        self.routes = Set((router.routes + webSocketRouter.routes).map(\.description)).sorted()
        self.apnsRoutes = apnsRoutes
        routeTable.set(self.routes)
        var application = Application(
            router: router,
            server: Self.server(
                webSocketRouter: webSocketRouter, configuration: configuration, cap: httpCap,
                eventStreams: EventStreamHandler.Serving(
                    responder: router.buildResponder(), bus: engine.bus,
                    writeTimeout: TimeAmount(seconds: configuration.streams.writeTimeout), logger: logger,
                    // A traced request keeps its spans: with tracing on, every request takes its route.
                    hot: configuration.server.hotRoutes && configuration.telemetry.otlpEndpoint == nil
                        ? HotRoutes(engine: engine, maxBodySize: configuration.server.maxBodySize) : nil
                )
            ),
            configuration: ApplicationConfiguration(
                address: .hostname(configuration.server.host, port: configuration.server.port), serverName: "Islet"
            ),
            services: services,
            onServerRunning: { [logger] channel in
                engine.serverIsListening()
                let port = channel.localAddress?.port ?? configuration.server.port
                if adminKeyPath != nil {
                    // The CLI sends the admin key it finds here to this address only.
                    let host = configuration.server.host.contains(":") ? "[\(configuration.server.host)]" : configuration.server.host
                    do {
                        try AdminKeyAddress.record("http://\(host):\(port)", in: configuration.store.dataDirectory)
                    } catch {
                        logger.warning(
                            "Cannot record where this server listens; the islet CLI will not send it the admin key by itself",
                            metadata: ["error": "\(error)"]
                        )
                    }
                }
                await onListening(.http, port)
            },
            logger: Self.frameworkLogger(logger)
        )
        // Once the engine's services run (its store's writer among them), before either port answers.
        application.beforeServerStarts {
            try await engine.ensureDefaultDevice()
            try await engine.replaceAdminKey(hash: KeyRing.hash(adminKey))
        }
        self.application = application
    }

    /// The logger Hummingbird gets. At the default level, `info`, its own "Server started and
    /// listening" and "Shutting down" lines would repeat what `islet serve` prints, so they are
    /// left out; at `debug` and `trace` everything is there.
    private static func frameworkLogger(_ logger: Logger) -> Logger {
        var quieter = logger
        if logger.logLevel == .info { quieter.logLevel = .notice }
        return quieter
    }

    /// The APNs-compatible endpoint: its own application (router, TLS, HTTP/2) on its own port,
    /// run as one of the main application's services; with its identity and the routes it answers.
    private static func apnsEndpoint(
        engine: Engine, verifier: ProviderTokenVerifier, configuration: IsletConfiguration, cap: ConnectionCap,
        requests: APNsRequestLog, logger: Logger, onListening: @escaping @Sendable (Endpoint, Int) async -> Void
    ) throws -> (any Service, TLSIdentity, [String]) {
        let settings = configuration.apns
        let host = settings.host ?? configuration.server.host
        let identity: TLSIdentity =
            if let certificate = settings.certificate, let privateKey = settings.privateKey {
                try TLSIdentity.load(certificate: certificate, privateKey: privateKey)
            } else {
                try TLSIdentity.development(in: configuration.store.tlsDirectory, host: host)
            }
        let router = Router(context: APNsRequestContext.self)
        router.add(middleware: APNsRequestRecorder(log: requests, clock: engine.clock))
        router.add(middleware: APNsErrorMiddleware())
        if settings.faults.total > 0 { router.add(middleware: APNsFaultMiddleware(faults: settings.faults)) }
        let apns = APNsRoutes(engine: engine, verifier: verifier, settings: settings)
        let routes = apns.add(to: router) + FCMRoutes(engine: engine, faults: settings.faults).add(to: router)
        // A push is served on its stream's loop as the update is on HTTP/1 (docs/engine.md §9.1),
        // unless a fault is to be injected (the fault middleware is the route's) or tracing is on.
        let hot = configuration.server.hotRoutes && configuration.telemetry.otlpEndpoint == nil && settings.faults.total == 0
            ? APNsHotPush.Serving(routes: apns, log: requests, logger: logger) : nil
        let application = Application(
            router: router,
            server: HTTPServerBuilder { responder in
                try APNsChildChannel(responder: responder, identity: identity, settings: settings, cap: cap, hotPush: hot, logger: logger)
            },
            configuration: ApplicationConfiguration(address: .hostname(host, port: settings.port), serverName: nil),
            onServerRunning: { channel in
                await onListening(.apns, channel.localAddress?.port ?? settings.port)
            },
            logger: frameworkLogger(logger)
        )
        return (application, identity, routes)
    }

    /// HTTP/1.1 with WebSocket upgrades on the event stream path, and Server-Sent Events served
    /// from the pipeline (`EventStreamHandler`). Every connection is counted
    /// against `server.maxConnections` and held to the request deadlines (`InboundDeadlines`) and
    /// `server.writeTimeout`;
    /// the guard owns the keep-alive idle timeout too, so Hummingbird's is off.
    private static func server(
        webSocketRouter: Router<IsletRequestContext>, configuration: IsletConfiguration, cap: ConnectionCap,
        eventStreams: EventStreamHandler.Serving
    ) -> HTTPServerBuilder {
        let webSocketResponder = webSocketRouter.buildResponder()
        let channelConfiguration = HTTP1WebSocketUpgradeChannel.Configuration(
            http1: .init(additionalChannelHandlers: [EventStreamHandler(serving: eventStreams)], idleTimeout: nil),
            ws: .init(autoPing: .enabled(timePeriod: .seconds(configuration.streams.keepAliveInterval)))
        )
        let limits = InboundDeadlines.Limits(configuration.server)
        return HTTPServerBuilder { responder in
            GuardedChildChannel(
                inner: HTTP1WebSocketUpgradeChannel(
                    responder: responder, webSocketResponder: webSocketResponder, configuration: channelConfiguration
                ),
                limits: limits, writeTimeout: TimeAmount(seconds: configuration.server.writeTimeout), cap: cap
            )
        }
    }
}
