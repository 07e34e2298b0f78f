import AsyncHTTPClient
import Crypto
import Foundation
import IsletClient
import IsletCore
import IsletTestSupport
import Testing

/// Debian's Prometheus scrapes two real nodes with the configuration and alert rules of
/// Examples/prometheus (docs/operations.md, "Metrics"): A sends to B's APNs endpoint, as in
/// `DeliveryLoopTests`; the test asks Prometheus's HTTP API what it scraped and which alerts fire.
@Suite("A real Prometheus scrapes two nodes", .serialized, .hangDetector)
struct PrometheusTests {
    static let examples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Examples/prometheus").standardized

    /// The example configuration, scraping `targets` every second and evaluating the rules as often.
    static func configuration(targets: [String]) throws -> String {
        var text = try String(contentsOf: examples.appendingPathComponent("prometheus.yml"), encoding: .utf8)
        let replacements = [
            ("scrape_interval: 15s", "scrape_interval: 1s"), ("evaluation_interval: 15s", "evaluation_interval: 1s"),
            (#"targets: ["127.0.0.1:8080"]"#, "targets: [\(targets.map { "\"\($0)\"" }.joined(separator: ", "))]"),
        ]
        for (example, used) in replacements {
            guard text.contains(example) else { throw PrometheusServerError("Examples/prometheus/prometheus.yml has no \(example)") }
            text = text.replacingOccurrences(of: example, with: used)
        }
        return text
    }

    @Test(.enabled(if: PrometheusServer.available))
    func prometheusScrapesTwoNodesAndTheCredentialsAlertFires() async throws {
        try await DeliveryLoopTests().withLoop { loop in
            let targets = [loop.a.url, loop.b.url].map { $0.replacingOccurrences(of: "http://", with: "") }
            let prometheus = try await PrometheusServer(
                configuration: try Self.configuration(targets: targets),
                files: ["islet-rules.yml": try String(contentsOf: Self.examples.appendingPathComponent("islet-rules.yml"), encoding: .utf8)]
            )
            defer { prometheus.stop() }
            let api = PrometheusAPI(url: prometheus.url, http: loop.http)
            let (a, b) = (targets[0], targets[1])

            let (onA, onB) = try await loop.startActivity(order: "9")
            try await loop.update(onA.id, "preparing")
            try await loop.waitOnB(onB.id, status: "preparing")

            // Both nodes are up, and each series is there, from the node it belongs to.
            let up = try await eventually("both nodes scraped", within: 60) {
                let up = try await api.query(#"up{job="islet"} == 1"#)
                return up.count == 2 ? up : nil
            }
            #expect(Set(up.map(\.instance)) == Set(targets))
            let delivered = try await eventually("A's update → delivered histogram", within: 60) {
                try await api.query("islet_delivery_latency_from_change_seconds_count > 1").first
            }
            #expect(delivered.instance == a, "A sent them")
            #expect(try await api.query(#"islet_delivery_requests_total{status="200"}"#).map(\.instance) == [a])
            let pushes = try await api.query(#"islet_pushes_total{outcome="delivered"} > 0"#)
            #expect(pushes.map(\.instance) == [b], "B took them as the phone")
            // Every node has these, Hummingbird's HTTP metrics among them (named as Prometheus names them).
            for series in [
                "islet_store_writable", "islet_delivery_credentials_refused", "islet_outbox_oldest_age_seconds",
                #"hb_requests_total{http_route="/metrics"}"#, "http_server_request_duration_seconds_count",
            ] {
                // A request's own counters appear from the scrape after it.
                _ = try await eventually("\(series) from both nodes", within: 30) {
                    Set(try await api.query(series).map(\.instance)) == Set(targets) ? true : nil
                }
            }
            #expect(Set(try await api.query("islet_store_writable == 1").map(\.instance)) == Set(targets))
            let free = try await api.query("islet_store_disk_available_bytes / islet_store_disk_size_bytes")
            #expect(Set(free.map(\.instance)) == Set(targets) && free.allSatisfy { $0.value > 0 && $0.value <= 1 }, "\(free)")
            // Every rule of the example file loaded and evaluates.
            let rules = try await api.rules()
            #expect(rules.map(\.name).sorted() == [
                "IsletCredentialsRefused", "IsletDeliveryFallingBehind", "IsletDeliverySlow", "IsletDiskNearlyFull", "IsletDown",
                "IsletStoreNotWritable",
            ])
            #expect(rules.allSatisfy { $0.health == "ok" }, "\(rules)")
            #expect(try await api.firingAlerts().isEmpty)
            // What each node exposes passes Prometheus's own lint: every series has its type and
            // its help text, Hummingbird's too (issue 41).
            for node in [loop.a!, loop.b!] {
                let response = try await loop.http.execute(HTTPClientRequest(url: node.url + "/metrics"), timeout: .seconds(30))
                let exposition = try await response.body.collect(upTo: 16 << 20)
                let lint = try await runProgram(
                    URL(fileURLWithPath: PrometheusServer.promtool), ["check", "metrics"], input: Data(exposition.readableBytesView), timeout: 60
                )
                #expect(lint.status == 0 && lint.stdout.isEmpty && lint.stderr.isEmpty, "promtool check metrics: \(lint.stdout)\(lint.stderr)")
            }

            // "Apple" revokes the key: A's next delivery is refused, and the alert fires for A.
            try await IsletClient(server: loop.b.url, key: loop.bData.adminKey, http: loop.http)
                .deleteProviderKey(bundleId: DeliveryLoopTests.bundleId, keyId: "KEY1234567")
            try await loop.update(onA.id, "onTheWay")
            let alert = try await eventually("IsletCredentialsRefused fires", within: 60) {
                try await api.firingAlerts().first { $0.name == "IsletCredentialsRefused" }
            }
            #expect(alert.instance == a)
        }
    }
}

/// The few calls of Prometheus's HTTP API the test makes.
struct PrometheusAPI {
    let url: String
    let http: HTTPClient

    struct Sample: CustomStringConvertible {
        var instance: String
        var value: Double
        var description: String { "\(instance)=\(value)" }
    }

    struct Rule: CustomStringConvertible {
        var name: String
        var health: String
        var description: String { "\(name): \(health)" }
    }

    struct Alert {
        var name: String
        var instance: String
    }

    /// An instant query's vector.
    func query(_ expression: String) async throws -> [Sample] {
        var components = URLComponents(string: url + "/api/v1/query")!
        components.queryItems = [URLQueryItem(name: "query", value: expression)]
        let data = try await get(components.percentEncodedQuery.map { url + "/api/v1/query?" + $0 } ?? "")
        return (data["result"]?.arrayValue ?? []).map { sample in
            Sample(
                instance: sample["metric"]?["instance"]?.stringValue ?? "",
                value: Double(sample["value"]?.arrayValue?.last?.stringValue ?? "") ?? .nan
            )
        }
    }

    /// The alerting rules loaded, with their health.
    func rules() async throws -> [Rule] {
        let groups = try await get(url + "/api/v1/rules?type=alert")["groups"]?.arrayValue ?? []
        return groups.flatMap { $0["rules"]?.arrayValue ?? [] }.map {
            Rule(name: $0["name"]?.stringValue ?? "", health: $0["health"]?.stringValue ?? "")
        }
    }

    /// The alerts firing now.
    func firingAlerts() async throws -> [Alert] {
        (try await get(url + "/api/v1/alerts")["alerts"]?.arrayValue ?? []).filter { $0["state"] == "firing" }.map {
            Alert(name: $0["labels"]?["alertname"]?.stringValue ?? "", instance: $0["labels"]?["instance"]?.stringValue ?? "")
        }
    }

    /// The `data` member of an answer whose `status` is `success`.
    private func get(_ address: String) async throws -> JSONValue {
        let response = try await http.execute(HTTPClientRequest(url: address), timeout: .seconds(10))
        let body = String(buffer: try await response.body.collect(upTo: 1 << 22))
        let answer = try WireFormat.decoder().decode(JSONValue.self, from: Data(body.utf8))
        guard answer["status"] == "success", let data = answer["data"] else {
            throw PrometheusServerError("Prometheus answered \(response.status.code): \(body)")
        }
        return data
    }
}
