import AsyncHTTPClient
import Foundation
import HummingbirdWSClient
import IsletClient
import IsletCore
import Logging
import Synchronization
import IsletTestSupport
import Testing

/// What one stream subscriber received, in order.
final class Received: Sendable {
    let events = Mutex<[Event]>([])

    var ids: [EventID] { events.withLock { $0.map(\.id) } }
    var lastID: EventID? { events.withLock { $0.last?.id } }
    func append(_ event: Event) { events.withLock { $0.append(event) } }
}

/// Updates the server acknowledged, by activity; and the next sequence number to send.
final class Acknowledgements: Sendable {
    let byActivity = Mutex<[ActivityID: Set<Int64>]>([:])
    private let sequence = Atomic<Int64>(0)

    func nextSequence() -> Int64 { sequence.add(1, ordering: .relaxed).newValue }
    func record(_ seq: Int64, for id: ActivityID) { byActivity.withLock { _ = $0[id, default: []].insert(seq) } }
    var count: Int { byActivity.withLock { $0.values.map(\.count).reduce(0, +) } }
}

extension IsletClient {
    /// The `seq` of each content update an activity's history holds: what a writer's
    /// acknowledged updates are checked against.
    func appliedSequences(_ id: ActivityID) async throws -> Set<Int64> {
        Set(try await history(id).compactMap { event -> Int64? in
            guard event.type == .contentUpdated, case .integer(let seq) = event.data["content"]?["state"]?["seq"] else { return nil }
            return seq
        })
    }
}

@Suite("The real server", .serialized, .hangDetector)
struct DurabilityTests {
    @Test func acknowledgedUpdatesSurviveSIGKILLAndStreamsResumeWithoutGaps() async throws {
        try await withHTTPClient { http in try await killAndResume(http) }
    }

    func killAndResume(_ http: HTTPClient) async throws {
        let data = DataDirectory()
        var server = try await ServerProcess(data: data)
        let admin = IsletClient(server: server.url, key: data.adminKey, http: http, logger: httpTrace)
        let app = try await admin.createApp(bundleId: "com.example.bike")
        var client = IsletClient(server: server.url, key: app.apiKey, http: http, logger: httpTrace)
        var activities: [ActivityID] = []
        for index in 0..<5 {
            let request = ActivityRequest(
                attributesType: "RideAttributes", attributes: ["rider": .integer(Int64(index))],
                content: ActivityContent(state: ["seq": 0])
            )
            activities.append(try await client.start(request).id)
        }

        // Two subscribers: Server-Sent Events and WebSocket, both from the first event.
        let sse = Received()
        let sseStream = try await client.events(.init(since: 0))
        let sseReader = Task {
            do { for try await event in sseStream { sse.append(event) } } catch {}
        }
        let ws = Received()
        let firstPort = server.port
        let wsReader = Task {
            try? await WebSocketClient.connect(
                url: "ws://127.0.0.1:\(firstPort)/v1/events/ws?since=0",
                configuration: .init(maxFrameSize: 1 << 20, additionalHeaders: [.authorization: "Bearer \(app.apiKey)"]),
                logger: Logger(label: "ws")
            ) { inbound, _, _ in
                for try await message in inbound.messages(maxSize: 1 << 20) {
                    if case .text(let text) = message {
                        ws.append(try WireFormat.decoder().decode(Event.self, from: Data(text.utf8)))
                    }
                }
            }
        }

        // Four writers stream updates; each acknowledgement is recorded.
        let acknowledged = Acknowledgements()
        let writers = (0..<4).map { _ in
            Task { [client, activities] in
                while !Task.isCancelled {
                    let seq = acknowledged.nextSequence()
                    let id = activities[Int(seq) % activities.count]
                    do {
                        _ = try await client.update(id, ContentUpdate(content: ActivityContent(state: ["seq": .integer(seq)])))
                        acknowledged.record(seq, for: id)
                    } catch {
                        return
                    }
                }
            }
        }
        while acknowledged.count < 300 {
            try await Task.sleep(for: .milliseconds(20))
        }
        // Mid-stream: no warning, no shutdown.
        let status = await server.stop(signal: SIGKILL)
        #expect(status == SIGKILL)
        for writer in writers { await writer.value }
        sseReader.cancel()
        wsReader.cancel()
        _ = await (sseReader.value, wsReader.value)
        let acked = acknowledged.byActivity.withLock { $0 }
        #expect(acknowledged.count >= 300)

        // Restart on the same data.
        server = try await ServerProcess(data: data)
        client = IsletClient(server: server.url, key: app.apiKey, http: http, logger: httpTrace)
        for id in activities {
            let missing = acked[id, default: []].subtracting(try await client.appliedSequences(id))
            #expect(missing.isEmpty, "acknowledged but lost after SIGKILL: \(missing.sorted())")
        }

        // Every stored event, as the store replays it.
        let lastStored = try await storedLastEventID(client)
        let stored = try await readStream(client.events(.init(since: 0, coalesce: false)), through: lastStored)
        // (An intermittent failure here once read no events and the next request met bytes that
        // were not a response: the server's log is kept with the failure to say why.)
        #expect(stored.map(\.id) == Array(1...lastStored), "read \(stored.count) of \(lastStored); the server said:\n\(server.output.suffix(4_000))")
        let storedByID = Dictionary(uniqueKeysWithValues: stored.map { ($0.id, $0) })

        // The restarted server takes new updates; each subscriber resumes after the last event
        // it received and gets exactly what it missed — across the kill — and the new ones.
        for seq in 1...10 {
            _ = try await client.update(activities[seq % 5], ContentUpdate(content: ActivityContent(state: ["seq": .integer(Int64(-seq))])))
        }
        let newest = try await storedLastEventID(client)
        #expect(newest == lastStored + 10)
        for (name, received) in [("SSE", sse), ("WebSocket", ws)] {
            let events = received.events.withLock { $0 }
            try #require(!events.isEmpty, "\(name) received nothing before the kill")
            try checkPrefix(events, against: storedByID, name: name)
            let resumeAfter = events.last?.id ?? 0
            let resumed: [Event]
            if name == "SSE" {
                resumed = try await readStream(client.events(.init(since: resumeAfter)), through: newest)
            } else {
                resumed = try await readWebSocket(port: server.port, key: app.apiKey, since: resumeAfter, through: newest)
            }
            #expect(resumed.map(\.id) == Array(resumeAfter + 1...newest), "\(name) resume")
        }

        // And live events flow after a replay.
        let live = try await client.events(.init(since: newest))
        _ = try await client.update(activities[0], ContentUpdate(content: ActivityContent(state: ["seq": -100])))
        let next = try await readStream(live, through: newest + 1)
        #expect(next.map(\.id) == [newest + 1])
        await server.stop(signal: SIGTERM)
    }

    /// Events received before the kill are the stored ones, in order; any skipped event is a
    /// content update a later received one for the same activity replaced (coalescing).
    func checkPrefix(_ events: [Event], against stored: [EventID: Event], name: String) throws {
        let ids = events.map(\.id)
        #expect(ids == ids.sorted() && Set(ids).count == ids.count, "\(name) ids must increase")
        for event in events {
            #expect(stored[event.id] == event, "\(name) event \(event.id) differs from the stored one")
        }
        let received = Set(ids)
        for id in 1...(ids.last ?? 0) where !received.contains(id) {
            let skipped = try #require(stored[id])
            let replaced = events.contains { $0.id > id && $0.type == .contentUpdated && $0.activityId == skipped.activityId }
            #expect(skipped.type == .contentUpdated && replaced, "\(name) missed event \(id) (\(skipped.type))")
        }
    }
}

/// With `ISLET_TRACE_HTTP=1`, where the HTTP client says what it does, at `trace`, on standard
/// error: its connection pool (`withHTTPClient`'s clients) and each request given this logger
/// (`IsletClient(logger:)`), each line with its connection's id. For the stream tests that met
/// bytes that were no response on a kept-alive connection (`Tests/Stress/stream-shape`).
let httpTrace: Logger? = {
    guard ProcessInfo.processInfo.environment["ISLET_TRACE_HTTP"] == "1" else { return nil }
    var logger = Logger(label: "ahc", factory: { label in StreamLogHandler.standardError(label: label) })
    logger.logLevel = .trace
    return logger
}()

/// Runs `body` with an HTTP client that is shut down afterwards.
func withHTTPClient<T>(_ body: (HTTPClient) async throws -> T) async throws -> T {
    let http = httpTrace.map { HTTPClient(eventLoopGroupProvider: .singleton, backgroundActivityLogger: $0) }
        ?? HTTPClient(eventLoopGroupProvider: .singleton)
    do {
        let value = try await body(http)
        try await http.shutdown()
        return value
    } catch {
        try? await http.shutdown()
        throw error
    }
}

/// The id of the last stored event, from the server's health report.
func storedLastEventID(_ client: IsletClient) async throws -> EventID {
    guard case .integer(let id) = try await client.health()["lastEventId"] else { return 0 }
    return id
}

/// Reads a stream until the event with id `last` (or fails after 30 s).
func readStream(_ stream: AsyncThrowingStream<Event, any Error>, through last: EventID) async throws -> [Event] {
    try await within(30) {
        var events: [Event] = []
        for try await event in stream {
            events.append(event)
            if event.id >= last { break }
        }
        return events
    }
}

/// Reads the WebSocket stream from `since` until the event with id `last`.
func readWebSocket(port: Int, key: String, since: EventID, through last: EventID) async throws -> [Event] {
    let received = Received()
    _ = try await within(30) {
        try await WebSocketClient.connect(
            url: "ws://127.0.0.1:\(port)/v1/events/ws?since=\(since)",
            configuration: .init(maxFrameSize: 1 << 20, additionalHeaders: [.authorization: "Bearer \(key)"]),
            logger: Logger(label: "ws")
        ) { inbound, outbound, _ in
            for try await message in inbound.messages(maxSize: 1 << 20) {
                guard case .text(let text) = message else { continue }
                let event = try WireFormat.decoder().decode(Event.self, from: Data(text.utf8))
                received.append(event)
                if event.id >= last {
                    try await outbound.close(.normalClosure, reason: nil)
                }
            }
        }
    }
    return received.events.withLock { $0 }
}

