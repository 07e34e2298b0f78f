import Configuration
import Foundation
import SystemPackage
import IsletAPNs
import IsletCore
import IsletEngine
import IsletServer
import IsletStore
import IsletTestSupport
import Testing

@Suite("Operations", .hangDetector)
struct OperationsTests {
    @Test func healthReportsTheStore() async throws {
        try await withIslet { islet in
            let health = try await islet.request(.GET, "/healthz")
            #expect(health.status == 200)
            #expect(health.json["status"] == "ok")
            #expect(health.json["lastEventId"] == 0)
        }
    }

    @Test func metricsCountActivitiesUpdatesAndSubscribers() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.bike")
            let client = islet.isletClient(key: key)
            let stream = try await client.events()
            let activity = try await islet.start(key: key)
            _ = try await client.update(activity.id, ContentUpdate(content: ActivityContent(state: ["speed": 2]), timestamp: t0))
            _ = try? await client.update(activity.id, ContentUpdate(content: ActivityContent(state: ["speed": 1]), timestamp: t0.addingTimeInterval(-9)))
            _ = try await islet.start(key: key)
            _ = try await within { try await collect(stream, count: 4) }
            let reply = try await islet.request(.GET, "/metrics")
            #expect(reply.headers.first(name: "Content-Type")?.hasPrefix("text/plain") == true)
            let text = reply.text
            for line in [
                #"islet_activities{state="active"} 2"#, #"islet_activities{state="ended"} 0"#,
                "islet_updates_applied_total 1", #"islet_updates_ignored_total{reason="olderTimestamp"} 1"#,
                "islet_subscribers 1", #"islet_events_total{type="started"} 2"#,
            ] {
                #expect(text.contains(line), "\(line)")
            }
        }
    }

    @Test func configurationReadsEveryKeyStrictly() async throws {
        let values: [AbsoluteConfigKey: ConfigValue] = [
            "server.host": "0.0.0.0", "server.port": "9090", "server.maxBodySize": "2048",
            "store.dataDirectory": "/tmp/x", "store.durability": "normal", "store.retention": "2d", "store.commitTimeout": "3s",
            "lifecycle.maxActiveDuration": "2h", "lifecycle.dismissalWindow": "30m", "lifecycle.maxLifetime": "3h",
            "lifecycle.maxPayloadSize": "8192", "lifecycle.maxActivitiesPerApp": "50",
            "lifecycle.maxActivitiesPerDevice": "100", "lifecycle.maxTimestampLead": "1h",
            "streams.bufferSize": "64", "streams.keepAlive": "5s", "streams.writeTimeout": "1m", "log.level": "debug",
            "lifecycle.pushBudgetPerHour": "3", "lifecycle.frequentPushBudgetPerHour": "7",
            "apns.enabled": "false", "apns.host": "::1", "apns.port": "4443", "apns.certificate": "/c.pem",
            "apns.privateKey": "/k.pem", "apns.tokenRotation": "10m", "apns.maxChannelsPerApp": "20",
        ]
        let configuration = try IsletConfiguration(reader: ConfigReader(provider: InMemoryProvider(values: values)))
        #expect(configuration.server.host == "0.0.0.0")
        #expect(configuration.server.port == 9090)
        #expect(configuration.server.maxBodySize == 2048)
        #expect(configuration.store.dataDirectory == "/tmp/x")
        #expect(configuration.store.durability == .normal)
        #expect(configuration.store.retention == 2 * 86_400)
        #expect(configuration.store.commitTimeout == 3)
        #expect(configuration.lifecycle.maxActiveDuration == 7200)
        #expect(configuration.lifecycle.dismissalWindow == 1800)
        #expect(configuration.lifecycle.maxLifetime == 3 * 3600)
        #expect(configuration.lifecycle.maxPayloadSize == 8192)
        #expect(configuration.lifecycle.maxActivitiesPerApp == 50)
        #expect(configuration.lifecycle.maxActivitiesPerDevice == 100)
        #expect(configuration.lifecycle.maxTimestampLead == 3600)
        #expect(configuration.streams.bufferSize == 64)
        #expect(configuration.streams.keepAliveInterval == 5)
        #expect(configuration.streams.writeTimeout == 60)
        #expect(configuration.logLevel == .debug)
        #expect(configuration.lifecycle.pushBudgetPerHour == 3)
        #expect(configuration.lifecycle.frequentPushBudgetPerHour == 7)
        #expect(configuration.apns.enabled == false)
        #expect(configuration.apns.host == "::1")
        #expect(configuration.apns.port == 4443)
        #expect(configuration.apns.certificate == "/c.pem")
        #expect(configuration.apns.privateKey == "/k.pem")
        #expect(configuration.apns.tokenRotation == 600)
        #expect(configuration.apns.maxChannelsPerApp == 20)
    }

    @Test func defaultsAreApplesAndZeroConfiguration() throws {
        let configuration = try IsletConfiguration(reader: ConfigReader(provider: InMemoryProvider(values: [:])))
        #expect(configuration.server.host == "127.0.0.1")
        #expect(configuration.server.port == 8080)
        #expect(configuration.store.dataDirectory == ".islet")
        #expect(configuration.lifecycle == LifecycleRules())
        #expect(configuration.lifecycle.maxActiveDuration == 8 * 3600)
        #expect(configuration.lifecycle.dismissalWindow == 4 * 3600)
        #expect(configuration.lifecycle.maxLifetime == 12 * 3600)
        #expect(configuration.lifecycle.maxPayloadSize == 4096)
    }

    @Test func sampleConfigurationListsEveryDefault() async throws {
        let sample = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../islet.sample.yaml").standardizedFileURL
        let provider = try await FileProvider<YAMLSnapshot>(filePath: FilePath(sample.path))
        let fromSample = try IsletConfiguration(reader: ConfigReader(provider: provider))
        #expect(fromSample == IsletConfiguration())
        // The same file with values changed is read, so the comparison above means something.
        let edited = FileManager.default.temporaryDirectory.appendingPathComponent("islet-\(UUID().uuidString).yaml")
        defer { try? FileManager.default.removeItem(at: edited) }
        try String(contentsOf: sample, encoding: .utf8)
            .replacingOccurrences(of: "port: 8080", with: "port: 9999")
            .replacingOccurrences(of: "maxActiveDuration: 8h", with: "maxActiveDuration: 2h30m")
            .write(to: edited, atomically: true, encoding: .utf8)
        let editedProvider = try await FileProvider<YAMLSnapshot>(filePath: FilePath(edited.path))
        let fromEdited = try IsletConfiguration(reader: ConfigReader(provider: editedProvider))
        #expect(fromEdited.server.port == 9999)
        #expect(fromEdited.lifecycle.maxActiveDuration == 2.5 * 3600)
        // Every key the server reads is in the sample (the admin key as a comment).
        let text = try String(contentsOf: sample, encoding: .utf8)
        for key in [
            "host", "port", "maxBodySize", "adminKey", "dataDirectory", "durability", "retention", "maxActiveDuration",
            "dismissalWindow", "maxLifetime", "maxPayloadSize", "maxActivitiesPerApp", "maxActivitiesPerDevice",
            "maxTimestampLead", "bufferSize", "keepAlive", "writeTimeout", "level", "pushBudgetPerHour",
            "frequentPushBudgetPerHour", "enabled", "certificate", "privateKey", "tokenRotation", "maxChannelsPerApp",
            "maxConnections", "requestHeadTimeout", "requestBodyTimeout", "minBodyRate", "idleTimeout", "firstRequestTimeout",
            "requestTimeout", "shutdownTimeout", "pages", "concurrency", "maxBackoff", "faults", "tokenRateLimit",
            "providerTokenInterval", "database", "lease", "connections", "renewalLead", "otlpEndpoint", "hotRoutes",
        ] {
            #expect(text.contains("  \(key):") || text.contains("# \(key):"), "\(key) is missing from islet.sample.yaml")
        }
    }

    /// The console says every reason in words: its one table (`WORDS` in console.js) names every
    /// reason an update is ignored for, an activity changes state for, and a delivery ends with.
    @Test func consoleHasWordsForEveryReason() throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Sources/IsletServer/Display/console.js")
        let text = try String(contentsOf: script, encoding: .utf8)
        func table(_ name: String) -> Set<String> {
            guard let start = text.range(of: "    \(name): {\n"), let end = text.range(of: "\n    }", range: start.upperBound..<text.endIndex) else {
                return []
            }
            return Set(text[start.upperBound..<end.lowerBound].split(separator: "\n").compactMap { line in
                line.split(separator: ":").first.map { $0.trimmingCharacters(in: .whitespaces) }
            })
        }
        #expect(table("ignore") == Set(IgnoreReason.allCases.map(\.rawValue)))
        #expect(table("state") == Set(StateChangeReason.allCases.map(\.rawValue)))
        #expect(table("outcome") == Set(DeliveryReport.Outcome.allCases.map(\.rawValue)))
    }

    @Test func docsListEveryReasonTheCodeGives() throws {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../docs")
        let errors = try String(contentsOf: docs.appendingPathComponent("errors.md"), encoding: .utf8)
        let documented = Set(errors.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("| `") else { return nil }
            return line.dropFirst(3).split(separator: "`").first.map(String.init)
        })
        #expect(documented == Set(ErrorReason.allCases.map(\.rawValue)))
        let api = try String(contentsOf: docs.appendingPathComponent("api.md"), encoding: .utf8)
        for reason in StateChangeReason.allCases.map(\.rawValue) + EventType.allCases.map(\.rawValue) {
            #expect(api.contains("`\(reason)`"), "docs/api.md does not mention \(reason)")
        }
        // Every APNs reason the endpoint gives, and every reason a device drops a push for.
        let apns = try String(contentsOf: docs.appendingPathComponent("apns.md"), encoding: .utf8)
        // Apple's, from the closed set, and the two the endpoint writes outside it (a connection's).
        let apnsReasons = APNsError.Reason.allCases.map(\.rawValue) + ["HTTP2Required", "IdleTimeout"]
        for reason in apnsReasons + IgnoreReason.allCases.map(\.rawValue) {
            #expect(apns.contains("`\(reason)`"), "docs/apns.md does not mention \(reason)")
        }
    }

    @Test func malformedSettingsNameTheirKey() {
        for (key, value) in [
            ("server.port", "eighty"), ("server.port", "70000"), ("store.durability", "sometimes"),
            ("lifecycle.maxActiveDuration", "8 hours"), ("log.level", "loud"), ("streams.bufferSize", "-1"),
            ("server.requestBodyTimeout", "0"), ("apns.idleTimeout", "30d"), ("server.maxConnections", "0"),
            ("streams.keepAlive", "0"), ("streams.keepAlive", "0.5s"), ("streams.writeTimeout", "0"),
            ("server.pages", "/nonexistent/pages"), ("apns.faults", "500=0.7, 503=0.7"), ("apns.faults", "418=0.1"),
            ("apns.tokenRateLimit", "-1"), ("apns.providerTokenInterval", "soon"), ("store.database", "mysql://u@h/d"),
            ("store.database", "islet.sqlite"), ("store.database", "postgres://u@h/d?sslmode=requir"),
            ("store.database", "postgres://u@h/d?sslmod=require"), ("store.database", "postgres://u@h/d?connect_timeout=0"),
            ("store.database", "postgres://u@h/d?sslmode=verify-full"), ("delivery.connections", "0"), ("delivery.connections", "65"),
            ("delivery.enabled", "sometimes"), ("telemetry.otlpEndpoint", "collector:4318"), ("telemetry.otlpEndpoint", "grpc://collector:4317"),
            ("telemetry.otlpEndpoint", "http://"), ("telemetry.otlpEndpoint", "http://127.0.0.1:99999"),
            ("telemetry.otlpEndpoint", "http://collector:0"),
        ] {
            let reader = ConfigReader(provider: InMemoryProvider(values: [AbsoluteConfigKey(key.split(separator: ".").map(String.init)): .init(.string(value), isSecret: false)]))
            #expect {
                _ = try IsletConfiguration(reader: reader)
            } throws: { error in
                (error as? ConfigurationError)?.key == key
            }
        }
    }

    @Test func theStoreIsSQLiteUnlessAPostgreSQLAddressIsGiven() throws {
        func read(_ value: String?) throws -> StoreSettings {
            let values: [AbsoluteConfigKey: ConfigValue] = value.map { [["store", "database"]: .init(.string($0), isSecret: true)] } ?? [:]
            return try IsletConfiguration(reader: ConfigReader(provider: InMemoryProvider(values: values))).store
        }
        #expect(try read(nil).database == nil)
        #expect(try read("sqlite").database == nil)
        #expect(try read("sqlite").location.hasSuffix("islet.sqlite"))
        let shared = try read("postgres://islet:secret@db:5432/islet")
        #expect(shared.database == "postgres://islet:secret@db:5432/islet" && shared.location == shared.database)
        #expect(try read("postgres://islet:secret@db/islet?sslmode=require&pool_size=4").database != nil)
    }

    /// A managed database's address is read where the setting enters: a misspelt TLS parameter
    /// stops the node at start, named, instead of connecting without TLS.
    @Test func aMisspeltDatabaseParameterIsRefusedAtStartByName() {
        let values: [AbsoluteConfigKey: ConfigValue] = [["store", "database"]: .init(.string("postgres://u:secret@h/d?ssl_mode=require"), isSecret: true)]
        #expect {
            _ = try IsletConfiguration(reader: ConfigReader(provider: InMemoryProvider(values: values)))
        } throws: { error in
            guard let error = error as? ConfigurationError else { return false }
            return error.key == "store.database" && error.problem.contains("\"ssl_mode\"") && error.problem.contains("sslmode")
                && !error.description.contains("secret")
        }
    }

    /// A node gives up on a request to Apple before its lease on the delivery runs out.
    @Test func aDeliveryLeaseOutlastsTheRequestItCovers() throws {
        func read(_ value: String?) throws -> DeliverySettings {
            let values: [AbsoluteConfigKey: ConfigValue] = value.map { [["delivery", "lease"]: .init(.string($0), isSecret: false)] } ?? [:]
            return try IsletConfiguration(reader: ConfigReader(provider: InMemoryProvider(values: values))).delivery
        }
        #expect(try read(nil).lease == 60 && read(nil).requestTimeout == 30)
        #expect(try read("5m").lease == 300 && read("5m").requestTimeout == 30)
        #expect(try read("6s").requestTimeout == 3)
        #expect(throws: ConfigurationError.self) { try read("1s") }
        #expect(throws: ConfigurationError.self) { try read("soon") }
    }
}
