import NIOCore
import NIOEmbedded
import NIOHTTP1
import IsletTestSupport
import Testing

@testable import IsletServer

/// The HTTP/1.1 request deadlines, on an embedded channel whose clock the test moves.
@Suite("Request guard", .hangDetector)
struct RequestGuardTests {
    static let limits = InboundDeadlines.Limits(
        head: .seconds(10), idle: .seconds(60), bodyGrace: .seconds(20), minBodyRate: 500, maxBodySize: 64 * 1024
    )

    /// A connection with the HTTP decoder and the guard after it, as the server sets them up,
    /// and a handler behind them that records the errors the guard sends on.
    private func connection() throws -> (EmbeddedChannel, ErrorRecorder) {
        let errors = ErrorRecorder()
        let channel = try EmbeddedChannel.connected([
            ByteToMessageHandler(HTTPRequestDecoder()), RequestGuard(limits: Self.limits, logger: .init(label: "test")), errors,
        ])
        return (channel, errors)
    }

    private func send(_ text: String, on channel: EmbeddedChannel) throws {
        try channel.writeInbound(ByteBuffer(string: text))
    }

    private func respond(on channel: EmbeddedChannel) throws {
        try channel.writeOutbound(HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: .ok)))
        try channel.writeOutbound(HTTPServerResponsePart.end(nil))
    }

    @Test func aConnectionThatSendsNothingIsClosedAfterTheHeadTimeout() throws {
        let (channel, _) = try connection()
        channel.expectClosed(after: .seconds(10))
    }

    @Test func anUpgradedConnectionOutlivesTheTimeout() throws {
        let (channel, _) = try connection()
        // A WebSocket upgrade consumes the request before the guard sees it, then says so: the
        // connection is a WebSocket now, and must stay open.
        channel.pipeline.fireUserInboundEventTriggered(HTTPServerUpgradeEvents.upgradeComplete(
            toProtocol: "websocket", upgradeRequest: HTTPRequestHead(version: .http1_1, method: .GET, uri: "/v1/events/ws")
        ))
        channel.embeddedEventLoop.advanceTime(by: .hours(1))
        #expect(channel.isActive)
    }

    @Test func aBodyTrickledByteByByteIsCutOffAfterTheGrace() throws {
        let (channel, errors) = try connection()
        try send("POST /v1/apps HTTP/1.1\r\nHost: islet\r\nContent-Length: 1000\r\n\r\n", on: channel)
        // One byte a second: every read used to restart the idle timer, holding the connection forever.
        for _ in 0..<19 {
            try send("x", on: channel)
            channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        }
        #expect(channel.isActive)
        // The grace ends at 20 s; 19 bytes bought 38 ms more.
        channel.embeddedEventLoop.advanceTime(by: .seconds(2))
        #expect(!channel.isActive)
        // The request's reader learns the body was cut short, rather than taking it for whole.
        #expect(errors.errors.contains { $0 is RequestBodyTimeout })
    }

    @Test func aBodyAtTheMinimumRateHasTimeForEveryByte() throws {
        let (channel, _) = try connection()
        try send("POST /v1/apps HTTP/1.1\r\nHost: islet\r\nContent-Length: 20000\r\n\r\n", on: channel)
        // 1,000 bytes a second: twice the minimum rate, 20 s for the body, well past the grace.
        for _ in 0..<19 {
            try send(String(repeating: "x", count: 1000), on: channel)
            channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        }
        #expect(channel.isActive)
        try send(String(repeating: "x", count: 1000), on: channel)
        channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        // The request is complete: the server owes the answer, and no deadline runs.
        #expect(channel.isActive)
    }

    @Test func aLongResponseIsNeverCutOff() throws {
        let (channel, _) = try connection()
        try send("GET /v1/events HTTP/1.1\r\nHost: islet\r\n\r\n", on: channel)
        try channel.writeOutbound(HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: .ok)))
        // An event stream: its response goes on for hours.
        channel.embeddedEventLoop.advanceTime(by: .hours(3))
        #expect(channel.isActive)
    }

    @Test func aKeepAliveConnectionMaySitIdleUntilTheIdleTimeout() throws {
        let (channel, _) = try connection()
        try send("GET /healthz HTTP/1.1\r\nHost: islet\r\n\r\n", on: channel)
        channel.embeddedEventLoop.advanceTime(by: .seconds(30))
        try respond(on: channel)
        // A slow head of the next request counts against the same minute.
        try send("GET /healthz HTTP/1.1\r\nHost:", on: channel)
        channel.expectClosed(after: .seconds(60))
    }

    @Test func anUnparseableFirstRequestIsAnsweredWithInvalidRequest() throws {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(HTTPResponseEncoder())
        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(HTTPRequestDecoder()))
        try channel.pipeline.syncOperations.addHandler(RequestGuard(limits: Self.limits, logger: .init(label: "test")))
        _ = try? channel.writeInbound(ByteBuffer(string: "GET / HTTP/1.1\r\nBad Header\r\n\r\n"))
        var answer = ""
        while let part = try channel.readOutbound(as: ByteBuffer.self) {
            answer += String(buffer: part)
        }
        #expect(answer.hasPrefix("HTTP/1.1 400 Bad Request"))
        #expect(answer.contains(#""reason":"invalidRequest""#))
    }
}

/// Records the errors that reach the end of the pipeline.
final class ErrorRecorder: ChannelInboundHandler {
    typealias InboundIn = Any
    private(set) var errors: [any Error] = []

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        errors.append(error)
    }
}
