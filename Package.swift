// swift-tools-version:6.2
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]
let testSwiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

// `ISLET_FUZZ=1` builds the fuzz targets for libFuzzer (Fuzz/run does, in .build-fuzz; docs/fuzzing.md):
// Islet's own modules get libFuzzer's coverage instrumentation, the dependencies do not, and the
// `fuzz-*` executables link libFuzzer's driver. Without it they are plain programs that replay
// inputs, so `swift build` and `swift test` never need libFuzzer.
let fuzzing = Context.environment["ISLET_FUZZ"] == "1"
let instrumented: [SwiftSetting] = fuzzing ? [.unsafeFlags(["-sanitize=fuzzer"]), .define("ISLET_FUZZING")] : []
/// The settings of a module the fuzz targets reach: the language features, plus coverage when fuzzing.
let fuzzable = swiftSettings + instrumented
/// The fuzz targets: `fuzz-<name>` (Fuzz/Targets/<name>/main.swift) runs one of `FuzzTarget.all`:
/// in a plain build it replays the files it is given; in the fuzz build it is `libfuzzer-<name>`.
let fuzzTargets = ["request-body", "layout", "renderer", "apns-push", "provider-token", "server-sent-events", "rules", "delivery-credential", "fcm-send", "android-inputs", "token-request", "webhook-inputs"]

let package = Package(
    name: "islet",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "islet", targets: ["islet"]),
        .library(name: "IsletCore", targets: ["IsletCore"]),
        .library(name: "IsletClient", targets: ["IsletClient"]),
        .library(name: "IsletRender", targets: ["IsletRender"]),
        .library(name: "IsletKit", targets: ["IsletKit"]),
        // What an iOS app adds to keep its Live Activity tokens fresh at its Islet backend
        // (docs/installations.md): a client key, no secret. It pulls nothing of the server.
        .library(name: "IsletLiveActivities", targets: ["IsletLiveActivities"]),
    ],
    dependencies: [
        // One trait: with two, SwiftPM orders their -D flags differently from one planning to
        // the next and rebuilds Hummingbird whenever the environment changes (a new terminal).
        // Islet reads its settings itself, so ConfigurationSupport is not needed.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1", traits: ["FullFoundation"]),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.8.1"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.8.0"),
        .package(url: "https://github.com/apple/swift-configuration.git", from: "1.4.0", traits: ["YAML"]),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        // Traces: the API (Hummingbird's TracingMiddleware uses it too); IsletTracing exports them.
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.34.1"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.8.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/pointfreeco/swift-snapshot-testing.git", from: "1.19.7"),
        // `swift package generate-documentation --target IsletKit`: IsletKit's DocC.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin.git", from: "1.5.0"),
    ],
    targets: [
        .target(name: "IsletCore", swiftSettings: fuzzable),
        .target(
            name: "IsletRender",
            dependencies: ["IsletCore"],
            exclude: ["Icons", "Assets"],
            swiftSettings: fuzzable,
            plugins: ["EmbedFilesPlugin"]
        ),
        .executableTarget(name: "EmbedFiles", swiftSettings: swiftSettings),
        .plugin(name: "EmbedFilesPlugin", capability: .buildTool(), dependencies: ["EmbedFiles"]),
        .target(
            // The application layer: every use case once, over the store protocol; the bus, the
            // fan-out and the timers (docs/engine.md). No HTTP, no SQL, no renderer.
            name: "IsletEngine",
            dependencies: [
                "IsletCore",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            // The SQL store, written once over both databases: every statement and row mapping,
            // over a driver seam (`SQLSession`) and the few places the SQL must differ
            // (`SQLDialect`). No driver: SQLite's is IsletStore's, PostgreSQL's IsletPostgres's.
            name: "IsletSQL",
            dependencies: ["IsletCore", "IsletEngine"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "IsletStore",
            dependencies: [
                "IsletCore",
                "IsletEngine",
                "IsletSQL",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            // The store on PostgreSQL, for several nodes on one database (docs/cluster.md).
            name: "IsletPostgres",
            dependencies: [
                "IsletCore",
                "IsletEngine",
                "IsletSQL",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            // Webhooks to the backend (docs/webhooks.md): Standard Webhooks' secrets and
            // signatures, and where a request may go.
            name: "IsletWebhooks",
            dependencies: [
                "IsletCore",
                "IsletEngine",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            // Sends the engine's deliveries to Apple's APNs over HTTP/2 (docs/delivery.md).
            name: "IsletDelivery",
            dependencies: [
                "IsletCore",
                "IsletEngine",
                "IsletAPNs",
                "IsletFCM",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "IsletAPNs",
            dependencies: [
                "IsletCore",
                .product(name: "JWTKit", package: "jwt-kit"),
                // A delivery credential's authority is read where the credential enters.
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: fuzzable
        ),
        .target(
            // Google's side of FCM: service accounts, the access-token assertions they sign, and
            // their checking when Islet plays Google (docs/android.md).
            name: "IsletFCM",
            dependencies: [
                "IsletCore",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: fuzzable
        ),
        .target(
            name: "IsletServer",
            dependencies: [
                "IsletCore",
                "IsletRender",
                "IsletEngine",
                "IsletWebhooks",
                "IsletAPNs",
                "IsletFCM",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdHTTP2", package: "hummingbird"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
            ],
            exclude: ["Display", "OpenAPI"],
            swiftSettings: swiftSettings,
            plugins: ["EmbedFilesPlugin"]
        ),
        .target(
            // The tracer and its OTLP/HTTP exporter, for `telemetry.otlpEndpoint` (docs/operations.md §1).
            name: "IsletTracing",
            dependencies: [
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "IsletClient",
            dependencies: [
                "IsletCore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                // NIOConnectionError: why a connection failed (the name that did not resolve).
                .product(name: "NIOPosix", package: "swift-nio"),
                // NIOSSLError: a certificate not trusted, said as such.
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "IsletKit",
            dependencies: [
                "IsletCore",
                "IsletClient",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            // An app's library (docs/installations.md): written against ActivityKit's API, which
            // IsletKit plays where ActivityKit is not (Linux), so it is tested here end to end.
            name: "IsletLiveActivities",
            dependencies: [.target(name: "IsletKit", condition: .when(platforms: [.linux, .macOS, .windows, .android]))],
            swiftSettings: swiftSettings
        ),
        .target(
            // The reference documents' scenarios against IsletKit: `islet demo <name>`.
            name: "IsletExamples",
            dependencies: [
                "IsletKit",
                "IsletClient",
                "IsletCore",
                "IsletAPNs",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Examples/Scenarios",
            swiftSettings: swiftSettings
        ),
        .target(
            // The phone's side of delivery: an iOS app's code, written with ActivityKit's API and
            // the app library (README, "Driving real iPhones"), compiled against IsletKit here.
            name: "PhoneApp",
            dependencies: ["IsletKit", "IsletLiveActivities"],
            path: "Examples/PhoneApp/PhoneApp",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            // Examples/MyApp's app, compiled here too: the README's IsletKit snippet (its source)
            // compiles with every build of Islet. Examples/MyApp is the package a user copies.
            name: "MyAppExample",
            dependencies: ["IsletKit"],
            path: "Examples/MyApp/Sources/MyApp",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            // Examples/MyApp's iOS app: the README's app library snippet compiles with every build.
            name: "MyiOSAppExample",
            dependencies: ["IsletKit", "IsletLiveActivities"],
            path: "Examples/MyApp/Sources/MyiOSApp",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "phone-app",
            dependencies: ["PhoneApp", "IsletKit", "IsletLiveActivities"],
            path: "Examples/PhoneApp/Main",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "IsletKitTests",
            dependencies: ["IsletKit", "IsletCore", "IsletRender"],
            swiftSettings: testSwiftSettings
        ),
        .testTarget(
            // The reference document 002's own code (StatusAttribute, Status, LiveActivityHelper),
            // as the article prints it but for its import lines, in Swift 5 mode as it was written.
            name: "IsletKitReferenceTests",
            dependencies: [
                "IsletKit",
                "IsletServer",
                "IsletStore",
                "IsletDelivery",
                "IsletClient",
                "IsletCore",
                "IsletTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .executableTarget(
            name: "islet",
            dependencies: [
                "IsletCore",
                "IsletAPNs",
                // What sends deliveries to Apple and Google, handed to the server as the store is.
                "IsletDelivery",
                // What sends webhooks to backends, handed over likewise.
                "IsletWebhooks",
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                // `islet webhooks listen`'s WebSocket.
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                "IsletServer",
                "IsletStore",
                "IsletPostgres",
                "IsletClient",
                "IsletRender",
                "IsletKit",
                "IsletExamples",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                "IsletTracing",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            // The load harness: Islet and its peers, the same workload (Benchmarks/README.md).
            name: "islet-bench",
            dependencies: [
                "IsletAPNs",
                // Islet's own sender, measured on its own (delivery-send).
                "IsletCore",
                "IsletDelivery",
                "IsletEngine",
                // SQLite alone running the store's change statements (`islet-bench sqlite`).
                "IsletStore",
                // A PostgreSQL server of its own for Islet on PostgreSQL (islet-postgres).
                "IsletTestSupport",
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "HummingbirdHTTP2", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
            ],
            path: "Benchmarks/Harness",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "IsletTestSupport",
            path: "Tests/IsletTestSupport",
            swiftSettings: testSwiftSettings
        ),
        .testTarget(
            // The app library's bodies, decoded with the server's own types; its store.
            name: "IsletLiveActivitiesTests",
            dependencies: ["IsletLiveActivities", "IsletCore"],
            swiftSettings: testSwiftSettings
        ),
        .testTarget(
            name: "IsletCoreTests",
            dependencies: ["IsletCore"],
            swiftSettings: testSwiftSettings
        ),
        .testTarget(
            name: "IsletRenderTests",
            dependencies: [
                "IsletCore",
                "IsletRender",
                .product(name: "SnapshotTesting", package: "swift-snapshot-testing"),
            ],
            exclude: ["__Snapshots__"],
            swiftSettings: testSwiftSettings
        ),
        .testTarget(
            // The engine's use cases without HTTP, on real SQLite files; the bus, the fan-out, the
            // store's group commit and health.
            name: "IsletEngineTests",
            dependencies: [
                "IsletCore",
                "IsletEngine",
                // The FCM messages the engine builds, checked as Islet playing Google checks them.
                "IsletFCM",
                "IsletStore",
                "IsletSQL",
                "IsletPostgres",
                "IsletRender",
                "IsletTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: testSwiftSettings
        ),
        .testTarget(
            name: "IsletServerTests",
            dependencies: [
                "IsletCore",
                "IsletWebhooks",
                "IsletServer",
                "IsletClient",
                "IsletStore",
                "IsletEngine",
                "IsletAPNs",
                "IsletFCM",
                "IsletDelivery",
                // The upgrade fixtures of PostgreSQL (UpgradeTests).
                "IsletPostgres",
                "IsletTracing",
                "IsletTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdHTTP2", package: "hummingbird"),
            ],
            swiftSettings: testSwiftSettings
        ),
        .testTarget(
            name: "IsletIntegrationTests",
            dependencies: [
                "IsletCore",
                "IsletClient",
                "IsletAPNs",
                "IsletTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            exclude: ["Providers", "Browser"],
            swiftSettings: testSwiftSettings
        ),
        // libFuzzer's driver, declared for the fuzz build.
        .target(name: "CLibFuzzer"),
        .target(
            // The fuzz targets as functions over bytes, and the driver the `fuzz-*` programs run.
            name: "IsletFuzzing",
            dependencies: [
                "IsletCore",
                "IsletRender",
                "IsletAPNs",
                "IsletFCM",
                "CLibFuzzer",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: fuzzable
        ),
        .testTarget(
            // Every committed seed and regression input through its target: a finding stays fixed.
            name: "IsletFuzzingTests",
            dependencies: ["IsletFuzzing", "IsletFCM", "IsletTestSupport"],
            swiftSettings: testSwiftSettings
        ),
    ]
        + fuzzTargets.map { name in
            .executableTarget(
                name: "fuzz-\(name)",
                dependencies: ["IsletFuzzing"],
                path: "Fuzz/Targets/\(name)",
                swiftSettings: fuzzable,
                // lld: gold fails on the libFuzzer runtime's debug information. --gc-sections: the
                // runtime brings libFuzzer's own `main`, which a debug build (`Fuzz/run -d`) keeps
                // unless unused sections go, as a release build's do (the program's main is its own).
                linkerSettings: fuzzing ? [.unsafeFlags(["-sanitize=fuzzer", "-use-ld=lld", "-Xlinker", "--gc-sections"])] : []
            )
        }
)

// The fuzz build is the fuzz programs and what they reach, nothing else: one `swift build` makes
// them all (Fuzz/run), and nothing more is compiled with coverage. Its programs are
// `libfuzzer-<name>`, so a fuzz build in `.build` (`Fuzz/run -d`) leaves the plain `fuzz-<name>`
// programs, which the tests run, in place.
if fuzzing {
    let reached: Set = ["IsletCore", "IsletRender", "EmbedFiles", "EmbedFilesPlugin", "IsletAPNs", "IsletFCM", "CLibFuzzer", "IsletFuzzing"]
    package.targets.removeAll { !reached.contains($0.name) && !$0.name.hasPrefix("fuzz-") }
    package.products = fuzzTargets.map { .executable(name: "libfuzzer-\($0)", targets: ["fuzz-\($0)"]) }
}
