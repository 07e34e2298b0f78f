import Foundation
import IsletClient
import IsletCore
import IsletServer
import IsletTestSupport
import Testing

/// `GET /v1/events` served from the connection's pipeline (`EventStreamHandler`): what the
/// connection does around a stream — a refusal, a stream's end, a reader that takes nothing.
@Suite("Event streams held by the pipeline", .hangDetector)
struct HeldStreamTests {
    @Test func aRefusedStreamAndTheRequestPipelinedBehindItAreBothAnswered() async throws {
        try await withIslet { islet in
            let socket = try RawSocket(port: islet.port)
            socket.send(Array((
                "GET /v1/events?bogus=1 HTTP/1.1\r\nHost: x\r\n\r\n"
                    + "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            ).utf8))
            let reply = await offThePool { socket.readAll(seconds: 20) }
            let refused = try #require(reply.range(of: "HTTP/1.1 400 Bad Request"))
            let answered = try #require(reply.range(of: "HTTP/1.1 200 OK"))
            #expect(refused.lowerBound < answered.lowerBound)
            #expect(reply.contains("Unknown query parameter \\\"bogus\\\""))
        }
    }

    @Test func aStreamThatOverflowsEndsItsResponseAndTheConnectionServesTheNextRequest() async throws {
        try await withIslet({ $0.streams.bufferSize = 8; $0.store.durability = .normal }) { islet in
            // A reader with a tiny window that reads nothing until its queue has overflowed.
            let (activity, client, socket) = try await Self.stuckReader(on: islet, query: "?coalesce=false")
            let sent = try await Self.updateWhile({ islet.engine.bus.subscriberCount == 1 }, activity, client)
            #expect(islet.engine.bus.subscriberCount == 0, "the stuck reader's queue overflowed after \(sent) updates")
            // It reads now: the events written before the overflow, the end, and the response's last chunk.
            let (read, closed) = await offThePool {
                socket.read(seconds: 20) { $0.count >= 5 && $0.suffix(5).elementsEqual("0\r\n\r\n".utf8) }
            }
            let text = String(decoding: read, as: UTF8.self)
            #expect(!closed)
            #expect(text.contains(": stream ended (overflow); reconnect with Last-Event-ID"))
            // The connection serves the next request.
            socket.send(Array("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8))
            let next = await offThePool { socket.readAll(seconds: 20) }
            #expect(next.hasPrefix("HTTP/1.1 200 OK"), "\(next.prefix(200))")
        }
    }

    /// A request pipelined behind a live stream is not read (the stream may last for hours):
    /// once the stream ends, the connection closes, so the client sends it again on another —
    /// it used to stay open, and the next request's answer was read as this one's (issue 58).
    @Test func aRequestPipelinedBehindALiveStreamClosesTheConnectionOnceTheStreamEnds() async throws {
        try await withIslet({ $0.streams.bufferSize = 8; $0.store.durability = .normal }) { islet in
            let (activity, client, socket) = try await Self.stuckReader(
                on: islet, query: "?coalesce=false", behind: "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
            )
            _ = try await Self.updateWhile({ islet.engine.bus.subscriberCount == 1 }, activity, client)
            let (read, closed) = await offThePool { socket.read(seconds: 20) { _ in false } }
            let text = String(decoding: read, as: UTF8.self)
            #expect(closed)
            #expect(text.contains(": stream ended (overflow); reconnect with Last-Event-ID") && text.hasSuffix("0\r\n\r\n"), "\(text.suffix(200))")
            #expect(text.components(separatedBy: "HTTP/1.1 ").count == 2, "only the stream is answered")
        }
    }

    /// A stream asked for with HTTP/1.0 (nginx's default towards its upstream) is not chunked,
    /// which RFC 9112 forbids for a 1.0 request: its body runs to the connection's close.
    @Test func anHTTP10StreamIsWrittenRawAndEndsWithItsConnection() async throws {
        try await withIslet({ $0.streams.bufferSize = 8; $0.store.durability = .normal }) { islet in
            let (activity, client, socket) = try await Self.stuckReader(on: islet, query: "?coalesce=false", version: "HTTP/1.0")
            _ = try await Self.updateWhile({ islet.engine.bus.subscriberCount == 1 }, activity, client)
            let (read, closed) = await offThePool { socket.read(seconds: 20) { _ in false } }
            let text = String(decoding: read, as: UTF8.self)
            let parts = text.components(separatedBy: "\r\n\r\n")
            let head = parts[0].lowercased()
            let body = parts.dropFirst().joined(separator: "\r\n\r\n")
            #expect(closed)
            #expect(head.hasPrefix("http/1.1 200 ok") && head.contains("content-type: text/event-stream"), "\(head)")
            #expect(!head.contains("transfer-encoding") && head.contains("connection: close"), "\(head)")
            // No chunk sizes: the body starts with the stream's own first words and ends with its end.
            #expect(body.hasPrefix("retry: 1000\n: connected\n\n"), "\(body.prefix(80).debugDescription)")
            #expect(body.hasSuffix(": stream ended (overflow); reconnect with Last-Event-ID\n\n"), "\(body.suffix(80).debugDescription)")
        }
    }

    /// A stream asked for while Hummingbird still answers the requests before it on the
    /// connection waits for their answers' ends: its head went out among them, and a late end of
    /// theirs (a response with a length ends in the encoder after its last byte has gone) was
    /// taken by the encoder as the stream's, which wrote `0\r\n\r\n` into the live stream — the
    /// suite's "invalid constant string" (issue 58, point 8: found by Tests/Stress/stream-shape's
    /// capture, the stream's body ended 3 ms after its head and then going on).
    @Test func aStreamBehindRequestsStillBeingAnsweredComesAfterTheirAnswersAndIsNotEndedByThem() async throws {
        try await withIslet({ $0.store.durability = .normal }) { islet in
            let key = try await islet.createApp("com.example.fleet")
            let before = 20
            let (answers, _) = try await Self.streamBehind(String(repeating: "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", count: before), key: key, on: islet)
            #expect(answers.count == before && answers.allSatisfy { $0.hasPrefix("200 OK") }, "every healthz answered before the stream's head: \(answers.count)")
        }
    }

    /// The hot routes (docs/engine.md §9.1) share the connection with Hummingbird's task and the
    /// stream: an update answered on the loop comes after the answers before it, the requests
    /// behind it wait for it, and a stream behind them all opens after the last has ended.
    @Test func hotRequestsAndTheRequestsAroundThemAreAnsweredInOrderAndAStreamBehindThemAfterThem() async throws {
        try await withIslet({ $0.store.durability = .normal }) { islet in
            let key = try await islet.createApp("com.example.fleet")
            // Its key is now known to the engine, which the hot route asks without a read.
            let activity = try await islet.start(key: key)
            func update(_ n: Int, extra: String = "") -> String {
                let body = #"{"content": {"state": {"n": \#(n)}}\#(extra)}"#
                return "POST /v1/activities/\(activity.id)/update HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(key)\r\n"
                    + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
            }
            let healthz = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
            let (answers, _) = try await Self.streamBehind(
                healthz + update(1) + update(2) + healthz + update(3, extra: #", "bogus": 1"#) + update(4) + healthz + update(5), key: key, on: islet
            )
            // Each answer, in order: what it is.
            let told = answers.map { answer in
                if answer.contains(#""n":"#), let n = answer.components(separatedBy: #""n":"#).last?.first { return "n\(n)" }
                if answer.contains("invalidRequest") { return "refused" }
                return answer.contains(#""status""#) ? "healthz" : String(answer.prefix(40))
            }
            #expect(told == ["healthz", "n1", "n2", "healthz", "refused", "n4", "healthz", "n5"])
            #expect(try await islet.engine.activity(activity.id, owner: nil).content.state == ["n": 5])
        }
    }

    @Test func aReaderThatTakesNothingIsCutOffAfterTheStreamsWriteTimeout() async throws {
        // The connection's own timeout is far away: only the stream's cuts it off.
        try await withIslet({ $0.streams.writeTimeout = 1; $0.server.writeTimeout = 600; $0.store.durability = .normal }) { islet in
            let (activity, client, socket) = try await Self.stuckReader(on: islet, query: "")
            // One activity's updates coalesce in the subscriber's queue: it never overflows, and
            // the reader is let go only because it takes nothing.
            _ = try await Self.updateWhile({ islet.engine.bus.subscriberCount == 1 }, activity, client)
            _ = try await eventually("the stuck reader is cut off") { islet.engine.bus.subscriberCount == 0 ? true : nil }
            let closed = await offThePool { socket.read(seconds: 20) { _ in false }.closed }
            #expect(closed)
        }
    }

    /// An app with one activity, and a stream of its events read by a socket with a tiny window
    /// that reads nothing; returns once the stream is registered.
    /// `behind`: what the socket pipelines after the stream's request.
    /// Sends `requests` and a stream's request behind them on one connection, then starts an
    /// activity; answers once the stream has told of it: the answers before the stream's head
    /// (each from its status code on) and the stream, checked to be live (not ended by them).
    static func streamBehind(_ requests: String, key: String, on islet: Harness) async throws -> (answers: [String], stream: String) {
        let socket = try RawSocket(port: islet.port)
        socket.send(Array((requests + "GET /v1/events?coalesce=false HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(key)\r\n\r\n").utf8))
        _ = try await eventually("the stream is registered") { islet.engine.bus.subscriberCount == 1 ? true : nil }
        _ = try await islet.start(key: key)
        let (read, closed) = await offThePool {
            socket.read(seconds: 20) { String(decoding: $0, as: UTF8.self).contains("event: started") }
        }
        let text = String(decoding: read, as: UTF8.self)
        #expect(!closed)
        let streamHead = try #require(text.range(of: "Content-Type: text/event-stream"), "\(text.suffix(300))")
        // The last status line before the stream's head is the stream's.
        let parts: [String] = text[..<streamHead.lowerBound].components(separatedBy: "HTTP/1.1 ")
        let answers = Array(parts.dropFirst().dropLast())
        let stream = String(text[streamHead.lowerBound...])
        #expect(!stream.contains("\r\n0\r\n\r\n"), "the live stream's body was ended: \(stream.prefix(300).debugDescription)")
        return (answers, stream)
    }

    static func stuckReader(
        on islet: Harness, query: String, version: String = "HTTP/1.1", behind: String = ""
    ) async throws -> (ActivityID, IsletClient, RawSocket) {
        let key = try await islet.createApp("com.example.fleet")
        let activity = try await islet.start(key: key)
        let socket = try RawSocket(port: islet.port, receiveBuffer: 4096)
        socket.send(Array("GET /v1/events\(query) \(version)\r\nHost: x\r\nAuthorization: Bearer \(key)\r\n\r\n\(behind)".utf8))
        _ = try await eventually("the stream is registered") { islet.engine.bus.subscriberCount == 1 ? true : nil }
        return (activity.id, islet.isletClient(key: key), socket)
    }

    /// Updates an activity with ~4 KB of content, eight at a time, while `going` holds (at most
    /// 20,000 updates): a reader that takes nothing has its connection's buffers full after some
    /// 700 (loopback's send buffer grows to megabytes). Returns how many were sent.
    static func updateWhile(_ going: @escaping @Sendable () -> Bool, _ id: ActivityID, _ client: IsletClient) async throws -> Int {
        let padding = JSONValue.string(String(repeating: "x", count: 3800))
        var sent = 0
        while going(), sent < 20_000 {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for seq in sent..<(sent + 8) {
                    group.addTask {
                        _ = try await client.update(id, ContentUpdate(content: ActivityContent(state: ["seq": .integer(Int64(seq)), "padding": padding])))
                    }
                }
                try await group.waitForAll()
            }
            sent += 8
        }
        return sent
    }
}
