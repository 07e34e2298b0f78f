import ArgumentParser
import Configuration
import Foundation
import IsletDelivery
import IsletEngine
import IsletPostgres
import IsletServer
import IsletWebhooks
import IsletStore
import Logging
import Metrics
import IsletTracing
import ServiceLifecycle
import SystemPackage
import Tracing

/// `islet serve`: runs a server until SIGTERM or Ctrl-C.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run an Islet server (embedded SQLite, zero configuration).",
        discussion: """
            Settings come from these flags, then ISLET_* environment variables (ISLET_SERVER_PORT, \
            ISLET_LIFECYCLE_MAX_ACTIVE_DURATION, …), then the YAML file given with --config. \
            islet.sample.yaml lists every setting with its default.

            Two listeners: the REST API and the web display (--port, 8080), and the APNs-compatible \
            endpoint, HTTP/2 over TLS (apns.port, ISLET_APNS_PORT: 2197; docs/apns.md).
            """
    )

    @Option(help: "The address to listen on (default 127.0.0.1).")
    var host: String?

    @Option(help: "The port to listen on; 0 picks a free one (default 8080).")
    var port: Int?

    @Option(name: .customLong("data"), help: "The data directory (default ./.islet).")
    var dataDirectory: String?

    @Option(help: "The store: sqlite (the default, in the data directory) or postgres://user@host:port/database[?sslmode=…], shared by several nodes (env ISLET_STORE; docs/cluster.md).")
    var store: String?

    @Option(help: "A directory of your own web pages, served at /pages/ (pages that use /islet.js).")
    var pages: String?

    @Option(help: "A YAML configuration file (env ISLET_CONFIG).")
    var config: String?

    @Option(help: "The log level: trace, debug, info, notice, warning, error or critical.")
    var logLevel: String?

    func run() async throws {
        let configuration: IsletConfiguration
        do {
            configuration = try IsletConfiguration(reader: try await reader())
        } catch let error as ConfigurationError {
            throw CommandFailure(error.description)
        }
        let level = configuration.logLevel
        // Log lines carry trace_id and span_id while a span is active (docs/operations.md §1).
        let traceIds = ExportingTracer.loggingMetadata
        LoggingSystem.bootstrap({ label, metadataProvider in
            var handler = StreamLogHandler.standardError(label: label, metadataProvider: metadataProvider)
            handler.logLevel = level
            return handler
        }, metadataProvider: traceIds)
        let logger = Logger(label: "islet")
        let tracing: [any Service]
        do {
            tracing = try Self.bootstrapTracing(configuration.telemetry, environment: ProcessInfo.processInfo.environment, logger: logger)
        } catch {
            throw CommandFailure(error.description)
        }
        let banner = Banner(announcement: Self.announcement(for: configuration))
        let islet: Islet
        do {
            islet = try await Islet(configuration: configuration, logger: logger, openStore: Self.openStore, openTransport: PushServiceTransport.open,
                webhookTransport: HTTPWebhookTransport(allowPrivateNetworks: configuration.webhooks.allowPrivateNetworks, logger: logger)
            ) { endpoint, port in
                await banner.listening(endpoint, port: port)
            }
        } catch {
            Terminal.error("error: \(error)")
            throw ExitCode.failure
        }
        MetricsSystem.bootstrap(DescribedMetricsFactory(registry: islet.metrics.registry))
        do {
            try await islet.run(telemetry: tracing)
        } catch let error as AddressInUse {
            Terminal.error("error: \(error)")
            throw ExitCode.failure
        }
        // After Ctrl-C or SIGTERM: the streams ended, every acknowledged change is stored.
        logger.notice("Stopped", metadata: ["data": "\(configuration.store.dataDirectory)"])
    }

    /// With `telemetry.otlpEndpoint` set, bootstraps Islet's tracer, exporting spans over
    /// OTLP/HTTP (protobuf) to the endpoint's `/v1/traces`, and returns its exporter; otherwise
    /// the no-op tracer stays, and nothing runs. The standard `OTEL_*` variables refine it
    /// (`TraceSettings`: `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_BSP_SCHEDULE_DELAY`,
    /// `OTEL_TRACES_SAMPLER`, `OTEL_EXPORTER_OTLP_HEADERS`…), each checked here.
    static func bootstrapTracing(
        _ telemetry: TelemetrySettings, environment: [String: String], logger: Logger
    ) throws(TraceSettings.Problem) -> [any Service] {
        guard let endpoint = telemetry.otlpEndpoint else { return [] }
        let settings = try TraceSettings(otlpEndpoint: endpoint, environment: environment)
        let exporter = SpanExporter(settings: settings, logger: logger)
        InstrumentationSystem.bootstrap(ExportingTracer(sampler: settings.sampler, exporter: exporter))
        return [exporter]
    }

    /// Opens the store the configuration names: SQLite in the data directory, or PostgreSQL.
    @Sendable static func openStore(_ options: StoreOptions) async throws -> any Store {
        // The configuration took only these two forms (store.database).
        if options.location.hasPrefix("postgres://") || options.location.hasPrefix("postgresql://") {
            return try await PostgresStore.open(options, logger: Logger(label: "islet.postgres"))
        }
        return try SQLiteStore(options)
    }

    /// The settings, from flags first, then the environment, then the YAML file.
    private func reader() async throws -> ConfigReader {
        var flags: [AbsoluteConfigKey: ConfigValue] = [:]
        func set(_ key: String, _ value: String?) {
            if let value { flags[AbsoluteConfigKey(key.split(separator: ".").map(String.init))] = .init(.string(value), isSecret: false) }
        }
        set("server.host", host)
        set("server.port", port.map(String.init))
        set("store.dataDirectory", dataDirectory)
        // ISLET_STORE, the short spelling of ISLET_STORE_DATABASE.
        set("store.database", store ?? ProcessInfo.processInfo.environment["ISLET_STORE"])
        set("server.pages", pages)
        set("log.level", logLevel)
        var providers: [any ConfigProvider] = [
            InMemoryProvider(name: "flags", values: flags),
            EnvironmentVariablesProvider(secretsSpecifier: .specific(["ISLET_SERVER_ADMIN_KEY"])).prefixKeys(with: "islet"),
        ]
        if let path = config ?? ProcessInfo.processInfo.environment["ISLET_CONFIG"] {
            guard FileManager.default.fileExists(atPath: path) else {
                throw CommandFailure("The configuration file \(path) does not exist.")
            }
            providers.append(try await FileProvider<YAMLSnapshot>(filePath: FilePath(path)))
        }
        return ConfigReader(providers: providers)
    }

    /// What the server prints once each listener is up: where, where its data is, where the
    /// admin key is, and which certificate authority APNs providers trust.
    private static func announcement(for configuration: IsletConfiguration) -> @Sendable (Endpoint, Int) -> String {
        func bracketed(_ host: String) -> String { host.contains(":") ? "[\(host)]" : host }
        let host = bracketed(configuration.server.host)
        let apnsHost = bracketed(configuration.apns.host ?? configuration.server.host)
        let data =
            absolute(configuration.store.dataDirectory)
            + ((try? PostgresAddress(configuration.store.database ?? "")).map { ", store \($0.redacted) (shared)" } ?? "")
        let key =
            configuration.server.adminKey == nil
            ? "\(absolute(configuration.store.adminKeyPath)) (the islet CLI on this machine reads it)"
            : "set by the configuration (server.adminKey)"
        let trust =
            configuration.apns.certificate == nil
            ? "trust \(absolute((configuration.store.tlsDirectory as NSString).appendingPathComponent("ca.pem")))"
            : "certificate \(configuration.apns.certificate!)"
        // Failures played on purpose are said at start, so nobody takes them for Islet's own.
        let faults =
            configuration.apns.faults.total > 0
            ? "\n  playing Apple's failures on purpose (apns.faults): \(configuration.apns.faults)" : ""
        let displayNote =
            configuration.server.allowsKeylessAccess
            ? "(this machine only: no key needed)"
            : "(needs the device's key: islet devices key default)"
        return { endpoint, port in
            switch endpoint {
            case .http:
                """
                Islet \(Islet.version) listening on http://\(host):\(port)
                  display:    http://\(host):\(port)/ \(displayNote)
                  data:       \(data)
                  admin key:  \(key)
                  stop with Ctrl-C or SIGTERM
                """
            case .apns:
                "APNs-compatible endpoint listening on https://\(apnsHost):\(port) (HTTP/2; \(trust))" + faults
            }
        }
    }

    private static func absolute(_ path: String) -> String {
        URL(fileURLWithPath: path).standardizedFileURL.path
    }
}

/// Prints each listener's line as it comes up, the main one first: the listeners bind in
/// parallel, and the APNs line reads as a footnote to the banner, not a headline.
private actor Banner {
    private let announcement: @Sendable (Endpoint, Int) -> String
    private var mainIsUp = false
    private var held: [String] = []

    init(announcement: @escaping @Sendable (Endpoint, Int) -> String) {
        self.announcement = announcement
    }

    func listening(_ endpoint: Endpoint, port: Int) {
        let line = announcement(endpoint, port)
        switch endpoint {
        case .http:
            mainIsUp = true
            print(([line] + held).joined(separator: "\n"))
            held = []
        case .apns where !mainIsUp:
            held.append(line)
        case .apns:
            print(line)
        }
    }

    private func print(_ text: String) {
        Terminal.line(text)
    }
}
