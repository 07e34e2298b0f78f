import AsyncHTTPClient
import Foundation
import NIOHTTP1
import HTTPTypes
import HummingbirdWSClient
import IsletClient
import IsletCore
import IsletServer
import Logging
import NIOCore
import NIOWebSocket
import IsletTestSupport
import Testing

@Suite("Event streams", .hangDetector)
struct StreamTests {
    @Test func serverSentEventsArriveInOrderWithIds() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.bike")
            let stream = try await islet.isletClient(key: key).events()
            let activity = try await islet.start(key: key)
            _ = try await islet.isletClient(key: key).update(activity.id, ContentUpdate(content: ActivityContent(state: ["speed": 2])))
            _ = try await islet.isletClient(key: key).end(activity.id)
            let events = try await within { try await collect(stream, count: 3) }
            #expect(events.map(\.type) == [.started, .contentUpdated, .stateChanged])
            #expect(events.map(\.id) == [1, 2, 3])
            #expect(events.allSatisfy { $0.activityId == activity.id && $0.bundleId == "com.example.bike" })
            #expect(events[1].data["content"]?["state"] == ["speed": 2])
        }
    }

    @Test func appKeyStreamsOnlyItsOwnEvents() async throws {
        try await withIslet { islet in
            let bike = try await islet.createApp("com.example.bike")
            let ci = try await islet.createApp("com.example.ci")
            let bikeStream = try await islet.isletClient(key: bike).events()
            let refused = try await islet.request(.GET, "/v1/events?bundleId=com.example.ci", key: bike)
            #expect(refused.status == 403)
            _ = try await islet.start(key: ci)
            let mine = try await islet.start(key: bike)
            let first = try await within { try await collect(bikeStream, count: 1) }
            #expect(first.map(\.activityId) == [mine.id])
        }
    }

    @Test func filtersByActivityAndDevice() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.bike")
            _ = try await islet.isletClient(key: islet.admin).createDevice(id: "phone-2")
            let one = try await islet.start(key: key)
            let two = try await islet.start(key: key, extra: #","device":"phone-2""#)
            let client = islet.isletClient(key: key)
            let byActivity = try await client.events(.init(filter: EventFilter(activityId: two.id)))
            let byDevice = try await client.events(.init(filter: EventFilter(deviceId: "default")))
            _ = try await client.end(one.id)
            _ = try await client.end(two.id)
            #expect(try await within { try await collect(byActivity, count: 1) }.map(\.activityId) == [two.id])
            #expect(try await within { try await collect(byDevice, count: 1) }.map(\.activityId) == [one.id])
        }
    }

    @Test func resumesFromLastEventIdWithoutGapsOrRepeats() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.bike")
            let client = islet.isletClient(key: key)
            let activity = try await islet.start(key: key)
            for speed in 2...6 {
                _ = try await client.update(activity.id, ContentUpdate(content: ActivityContent(state: ["speed": .integer(Int64(speed))])))
            }
            // Header form, as EventSource sends it on reconnect.
            let reply = try await SSE.read(islet, key: key, headers: ["Last-Event-ID": "3"], until: "id: 6")
            #expect(reply.ids == [4, 5, 6])

            // Query form, then live events after the replay.
            let stream = try await client.events(.init(since: 4))
            _ = try await client.end(activity.id)
            let events = try await within { try await collect(stream, count: 3) }
            #expect(events.map(\.id) == [5, 6, 7])
            #expect(events.last?.type == .stateChanged)
        }
    }

    @Test func anIdAheadOfTheNewestCountsAsTheNewest() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.bike")
            let activity = try await islet.start(key: key)
            // A client that remembers id 500 from a server whose data was reset.
            let stream = try await islet.isletClient(key: key).events(.init(since: 500))
            _ = try await islet.isletClient(key: key).end(activity.id)
            let events = try await within { try await collect(stream, count: 1) }
            #expect(events.map(\.id) == [2])
        }
    }

    @Test func keepAliveCommentsWhenIdle() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.bike")
            let reading = Task { try await SSE.read(islet, key: key, until: ": keep-alive") }
            // Wait until the stream is registered, then let 15 seconds pass on the server's clock.
            try await within {
                while islet.engine.bus.subscriberCount == 0 {
                    try Task.checkCancellation()
                    await Task.yield()
                }
            }
            islet.clock.advance(by: 15)
            let reply = try await within {
                try await withTaskCancellationHandler { try await reading.value } onCancel: { reading.cancel() }
            }
            #expect(reply.text.contains(": keep-alive"))
        }
    }

    @Test func deadlinesReachSubscribersAsTheyHappen() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.bike")
            let activity = try await islet.start(key: key)
            let events = EventReader(try await islet.isletClient(key: key).events())
            _ = try await islet.isletClient(key: key).update(
                activity.id, ContentUpdate(content: ActivityContent(state: ["speed": 3], staleDate: t0.addingTimeInterval(60)))
            )
            islet.clock.advance(by: 61)
            let stale = try await within { try await events.next(2) }
            #expect(stale.map(\.type) == [.contentUpdated, .stateChanged])
            #expect(stale[1].data["to"] == "stale")
            islet.clock.advance(by: 8 * 3600)
            let ended = try await within { try await events.next(1) }
            #expect(ended[0].data["reason"] == "maxDurationReached")
        }
    }

    @Test func webSocketStreamsTheSameEvents() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.bike")
            let activity = try await islet.start(key: key)
            let client = islet.isletClient(key: key)
            _ = try await client.update(activity.id, ContentUpdate(content: ActivityContent(state: ["speed": 2])))
            let socket = WebSocketTap(port: islet.port, key: key, query: "since=1")
            _ = try await client.end(activity.id)
            let events = try await within { try await socket.events(count: 2) }
            #expect(events.map(\.id) == [2, 3])
            #expect(events.map(\.type) == [.contentUpdated, .stateChanged])
            socket.stop()
        }
    }

    @Test func webSocketNeedsAnUpgradeAndAValidKey() async throws {
        try await withIslet { islet in
            let plain = try await islet.request(.GET, "/v1/events/ws", key: islet.admin)
            #expect(plain.status == 400)
            #expect(plain.reason == "invalidRequest")
            let wrongKey = try await WebSocketTap.closeFrame(port: islet.port, key: "islet_app_nope", query: "")
            #expect(wrongKey?.closeCode == .unknown(4401))
            #expect(wrongKey?.reason?.hasPrefix("unauthorized:") == true)
            let badSince = try await WebSocketTap.closeFrame(port: islet.port, key: islet.admin, query: "since=x")
            #expect(badSince?.closeCode == .unknown(4400))
            let appKey = try await islet.createApp("com.example.bike")
            let otherApp = try await WebSocketTap.closeFrame(port: islet.port, key: appKey, query: "bundleId=com.example.ci")
            #expect(otherApp?.closeCode == .unknown(4403))
        }
    }
}

/// Reads a raw Server-Sent Events response.
enum SSE {
    struct Reply {
        var text: String
        var ids: [Int]
    }

    static func read(
        _ islet: Harness, key: String?, headers: [String: String] = [:], path: String = "/v1/events", until marker: String
    ) async throws -> Reply {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(islet.port)\(path)")
        if let key { request.headers.add(name: "Authorization", value: "Bearer \(key)") }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        let response = try await islet.http.execute(request, timeout: .seconds(10))
        var text = ""
        for try await buffer in response.body {
            text += String(buffer: buffer)
            if text.contains(marker) { break }
        }
        let ids = text.split(separator: "\n").compactMap { line in
            line.hasPrefix("id: ") ? Int(line.dropFirst(4)) : nil
        }
        return Reply(text: text, ids: ids)
    }
}

/// A WebSocket subscriber that collects events in the background.
final class WebSocketTap: Sendable {
    private let stream: AsyncThrowingStream<Event, any Error>
    private let task: Task<Void, any Error>

    init(port: Int, key: String, query: String) {
        let (stream, continuation) = AsyncThrowingStream<Event, any Error>.makeStream()
        self.stream = stream
        task = Task {
            do {
                try await WebSocketClient.connect(
                    url: "ws://127.0.0.1:\(port)/v1/events/ws?\(query)",
                    configuration: .init(maxFrameSize: 1 << 20, additionalHeaders: [.authorization: "Bearer \(key)"]),
                    logger: Logger(label: "ws-test")
                ) { inbound, _, _ in
                    for try await message in inbound.messages(maxSize: 1 << 20) {
                        if case .text(let text) = message {
                            continuation.yield(try WireFormat.decoder().decode(Event.self, from: Data(text.utf8)))
                        }
                    }
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
    }

    func events(count: Int) async throws -> [Event] {
        try await collect(stream, count: count)
    }

    func stop() {
        task.cancel()
    }

    /// How the server closed a WebSocket it refused right after the upgrade.
    struct Refusal {
        var closeCode: WebSocketErrorCode
        var reason: String?
    }

    /// Upgrades over a raw socket and returns the close frame the server sent, read to the
    /// server's end of the connection. Not HummingbirdWSClient: about one connection in 400 on an
    /// idle machine, and often enough with both cores busy that three in a row ended a loaded
    /// run, it never finishes a connection the server refuses right after the upgrade — `ss` then shows the client socket in CLOSE-WAIT
    /// with nothing left to read (it took the 101, the close frame and the server's FIN, all in
    /// one burst) and the server in FIN-WAIT-2. The client's upgrade path loses a close frame and
    /// EOF that arrive with the 101 (compare apple/swift-nio#2742); the server side is sound.
    static func closeFrame(port: Int, key: String?, query: String) async throws -> Refusal? {
        var head = "GET /v1/events/ws?\(query) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n"
        head += "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        if let key { head += "Authorization: Bearer \(key)\r\n" }
        let socket = try RawSocket(port: port)
        socket.send(Array((head + "\r\n").utf8))
        // Read until the close frame is whole (or the server has closed).
        let read = await offThePool { socket.read(seconds: Int(hangFloor)) { Self.refusal(in: $0) != nil } }.bytes
        return Self.refusal(in: read)
    }

    /// The close frame that follows a `101`, once it has arrived whole.
    private static func refusal(in read: [UInt8]) -> Refusal? {
        guard let headEnd = read.firstRange(of: Array("\r\n\r\n".utf8))?.upperBound,
            String(decoding: read[..<headEnd], as: UTF8.self).hasPrefix("HTTP/1.1 101"),
            read.count >= headEnd + 4, read[headEnd] == 0x88
        else { return nil }
        let length = Int(read[headEnd + 1] & 0x7F)
        guard read.count >= headEnd + 2 + length else { return nil }
        let code = Int(read[headEnd + 2]) << 8 | Int(read[headEnd + 3])
        return Refusal(closeCode: WebSocketErrorCode(codeNumber: code), reason: String(decoding: read[(headEnd + 4)..<(headEnd + 2 + length)], as: UTF8.self))
    }
}
