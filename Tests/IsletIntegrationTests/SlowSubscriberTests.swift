import AsyncHTTPClient
import Foundation
import IsletClient
import IsletCore
import Synchronization
import IsletTestSupport
import Testing

/// The newest content each subscriber has seen, by activity.
final class LatestStates: Sendable {
    let seq = Mutex<[ActivityID: Int64]>([:])

    func record(_ event: Event) {
        guard event.type == .contentUpdated, let id = event.activityId,
            case .integer(let value) = event.data["content"]?["state"]?["seq"]
        else { return }
        seq.withLock { $0[id] = value }
    }

    func all(reached target: Int64, of ids: [ActivityID]) -> Bool {
        seq.withLock { states in ids.allSatisfy { states[$0] == target } }
    }
}

extension DurabilityTests {
    @Test func aSubscriberThatNeverReadsHoldsNoOneUpAndMemoryStaysBounded() async throws {
        try await withHTTPClient { http in
            let data = DataDirectory()
            let server = try await ServerProcess(data: data, environment: [
                "ISLET_STORE_DURABILITY": "normal",
                // Long enough that the stuck subscriber stays connected for the whole test: both
                // the stream's write timeout and the connection's (server.writeTimeout) cut it.
                "ISLET_STREAMS_WRITE_TIMEOUT": "10m",
                "ISLET_SERVER_WRITE_TIMEOUT": "10m",
                "ISLET_LIFECYCLE_MAX_ACTIVITIES_PER_APP": "100",
                "ISLET_LIFECYCLE_MAX_ACTIVITIES_PER_DEVICE": "100",
            ])
            let admin = IsletClient(server: server.url, key: data.adminKey, http: http, logger: httpTrace)
            let app = try await admin.createApp(bundleId: "com.example.fleet")
            let client = IsletClient(server: server.url, key: app.apiKey, http: http, logger: httpTrace)
            // Content near the 4 KB limit, so buffering every update would show in memory.
            let padding = JSONValue.string(String(repeating: "x", count: 3800))
            func content(_ seq: Int64) -> ActivityContent {
                ActivityContent(state: ["seq": .integer(seq), "padding": padding])
            }
            let activities = try await (0..<100).asyncMap { _ in
                try await client.start(ActivityRequest(attributesType: "Truck", content: content(0))).id
            }

            // The stuck subscriber: a tiny receive buffer it never reads.
            let stuck = try RawSocket(port: server.port, receiveBuffer: 4096)
            stuck.send(Array("GET /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(app.apiKey)\r\n\r\n".utf8))
            // Two subscribers that keep up.
            let readers = try await (0..<2).asyncMap { _ in
                let latest = LatestStates()
                let stream = try await client.events()
                let task = Task { do { for try await event in stream { latest.record(event) } } catch {} }
                return (latest, task)
            }

            func send(round: Int64) async throws {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for slice in 0..<8 {
                        group.addTask {
                            for (index, id) in activities.enumerated() where index % 8 == slice {
                                _ = try await client.update(id, ContentUpdate(content: content(round)))
                            }
                        }
                    }
                    try await group.waitForAll()
                }
            }
            // Warm up, so buffers and caches are in place before measuring.
            try await send(round: 1)
            let before = server.residentKilobytes()
            for round in Int64(2)...100 {
                try await send(round: round)
            }
            // 10,000 updates in all. The others see every activity's latest state.
            for (latest, _) in readers {
                try await within(60) {
                    while !latest.all(reached: 100, of: activities) { try await Task.sleep(for: .milliseconds(20)) }
                }
            }
            let after = server.residentKilobytes()
            let metrics = try await metricsText(server.url, http: http)
            let coalesced = metricValue(metrics, "islet_events_coalesced_total") ?? 0
            // Each update is ~4 KB on the wire: holding them all for the stuck reader would be ~40 MB.
            #expect(after - before < 20_000, "resident memory grew from \(before) KB to \(after) KB")
            #expect(coalesced >= 9_000, "the stuck subscriber's queue coalesced \(coalesced) updates")
            #expect(metricValue(metrics, "islet_subscribers") == 3)
            for (_, task) in readers { task.cancel() }
            _ = stuck
            await server.stop(signal: SIGTERM)
        }
    }

    @Test func sigtermEndsStreamsAndExitsCleanly() async throws {
        try await withHTTPClient { http in
            let data = DataDirectory()
            let server = try await ServerProcess(data: data)
            let admin = IsletClient(server: server.url, key: data.adminKey, http: http)
            let stream = try await admin.events()
            let ended = Task {
                do {
                    for try await _ in stream {}
                    return true
                } catch {
                    return false
                }
            }
            let status = await server.stop(signal: SIGTERM)
            #expect(status == 0)
            #expect(await ended.value, "the stream should end cleanly, not fail")
            // The data directory is free again: a new server starts on it.
            let again = try await ServerProcess(data: data)
            await again.stop(signal: SIGTERM)
        }
    }
}

func metricsText(_ server: String, http: HTTPClient) async throws -> String {
    let response = try await http.execute(HTTPClientRequest(url: server + "/metrics"), timeout: .seconds(10))
    return String(buffer: try await response.body.collect(upTo: 1 << 20))
}

func metricValue(_ text: String, _ name: String) -> Double? {
    text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ").last!) }
}

extension Sequence {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }
}

extension DurabilityTests {
    @Test func aReaderThatStopsReadingIsCutOff() async throws {
        try await withHTTPClient { http in
            let data = DataDirectory()
            let server = try await ServerProcess(data: data, environment: [
                "ISLET_STORE_DURABILITY": "normal", "ISLET_STREAMS_WRITE_TIMEOUT": "2s",
            ])
            let admin = IsletClient(server: server.url, key: data.adminKey, http: http)
            let app = try await admin.createApp(bundleId: "com.example.fleet")
            let client = IsletClient(server: server.url, key: app.apiKey, http: http)
            let padding = JSONValue.string(String(repeating: "x", count: 3800))
            let id = try await client.start(ActivityRequest(attributesType: "Truck", content: ActivityContent(state: [:]))).id
            let stuck = try RawSocket(port: server.port, receiveBuffer: 4096)
            stuck.send(Array("GET /v1/events?coalesce=false HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(app.apiKey)\r\n\r\n".utf8))
            try await within(20) {
                while metricValue(try await metricsText(server.url, http: http), "islet_subscribers") != 1 {
                    try await Task.sleep(for: .milliseconds(50))
                }
            }
            // Enough to fill the socket buffers on both sides, so the server's write blocks.
            for seq in 1...1500 {
                _ = try await client.update(id, ContentUpdate(content: ActivityContent(state: ["seq": .integer(Int64(seq)), "padding": padding])))
            }
            // Two seconds into a blocked write, the server closes the connection.
            try await within(30) {
                while metricValue(try await metricsText(server.url, http: http), "islet_subscribers") != 0 {
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            await server.stop(signal: SIGTERM)
        }
    }
}
