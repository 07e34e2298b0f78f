import Foundation
import IsletClient
import IsletCore
import IsletTestSupport
import Testing

/// Traces across nodes (docs/operations.md §1), with the real programs: two nodes on one
/// PostgreSQL database export their spans over OTLP/HTTP to a small receiver (Python's
/// `opentelemetry-proto` decodes them); node A takes the REST update and sends nothing
/// (`delivery.enabled: false`), node A2 sends it to B, which plays Apple. The update's trace runs
/// from A's request through its commit to A2's request to Apple and Apple's answer.
@Suite("Traces across nodes", .serialized, .hangDetector)
struct TracingTests {
    static let receiver = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Providers/otlp_receiver.py")

    /// One span as the receiver wrote it.
    struct Span: Decodable {
        var traceId: String
        var spanId: String
        var parentSpanId: String
        var name: String
        var kind: Int
        var status: Int
        var attributes: [String: JSONValue]
        var instance: String?
    }

    static func spans(in file: URL) -> [Span] {
        let text = (try? String(contentsOf: file, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { try? JSONDecoder().decode(Span.self, from: Data($0.utf8)) }
    }

    @Test(.enabled(if: PostgresServer.available && pythonHas("opentelemetry.proto", requiredBy: "ISLET_REQUIRE_PYTHON_PROVIDER")))
    func oneTraceRunsFromARESTUpdateOnOneNodeToApplesAnswerOnAnother() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("islet-spans-\(UUID().uuidString).jsonl")
        defer { try? FileManager.default.removeItem(at: file) }
        let receiver = try await ChildProcess(URL(fileURLWithPath: "/usr/bin/env"), ["python3", Self.receiver.path, file.path])
        defer { receiver.kill() }
        let port = try await receiver.waitFor("the receiver listening") { output in
            output.split(separator: "\n").first { $0.hasPrefix("listening on ") }.flatMap { Int($0.dropFirst("listening on ".count)) }
        }
        let nodes = [
            "ISLET_STORE": try await PostgresServer.newDatabase(), "ISLET_SERVER_ADMIN_KEY": "admin-\(UUID().uuidString)",
            "ISLET_TELEMETRY_OTLP_ENDPOINT": "http://127.0.0.1:\(port)", "OTEL_BSP_SCHEDULE_DELAY": "200",
        ]
        // A logs each request (debug): its lines carry their trace's id.
        let a = nodes.merging([
            "ISLET_DELIVERY_ENABLED": "false", "OTEL_RESOURCE_ATTRIBUTES": "service.instance.id=a", "ISLET_LOG_LEVEL": "debug",
        ]) { _, new in new }
        try await DeliveryLoopTests().withLoop(a: a) { loop in
            let sender = try await ServerProcess(
                data: DataDirectory(),
                environment: loop.aEnvironment.merging(["ISLET_DELIVERY_ENABLED": "true", "OTEL_RESOURCE_ATTRIBUTES": "service.instance.id=a2"]) { _, new in new }
            )
            do {
                let (onA, onB) = try await loop.startActivity(order: "5")
                #expect(sender.isRunning)
                try await loop.update(onA.id, "preparing")
                try await loop.waitOnB(onB.id, status: "preparing")
                let (update, commit, send) = try await eventually("one trace from A's update to Apple's answer through A2", within: 30) {
                    let spans = Self.spans(in: file)
                    for update in spans where update.instance == "a" && update.kind == 2 && update.name.hasSuffix("/update") {
                        let trace = spans.filter { $0.traceId == update.traceId }
                        guard let commit = trace.first(where: { $0.name == "islet.commit" && $0.instance == "a" }),
                              let send = trace.first(where: { $0.name == "apns.send" && $0.instance == "a2" })
                        else { continue }
                        return (update, commit, send)
                    }
                    return nil
                }
                // The request, then its commit on A, then the request to Apple on A2, Apple's answer on it.
                #expect(commit.parentSpanId == update.spanId)
                #expect(send.parentSpanId == commit.spanId)
                #expect(send.kind == 3, "a client span")
                #expect(send.attributes["http.response.status_code"] == 200, "\(send.attributes)")
                #expect(send.attributes["islet.delivery.event"] == "update", "\(send.attributes)")
                let log = try await loop.appOnA.deliveries(onA.id)
                let sent = log.last { $0.report.event == "update" && $0.report.status == 200 }
                #expect(sent?.report.apnsId.map(JSONValue.string) == send.attributes["apns.id"], "\(send.attributes)")
                #expect(loop.a.output.contains("span_id=\(update.spanId) status=200 trace_flags=1 trace_id=\(update.traceId)"), "A's log has no line of the trace")
                // A sent nothing: every request to Apple came from A2.
                #expect(!Self.spans(in: file).contains { $0.name == "apns.send" && $0.instance == "a" })
            } catch {
                await sender.stop(signal: SIGTERM)
                throw error
            }
            await sender.stop(signal: SIGTERM)
        }
    }
}
