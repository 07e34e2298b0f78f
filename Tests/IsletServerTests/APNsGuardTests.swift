import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
import IsletTestSupport
import Testing

@testable import IsletServer

/// The APNs endpoint's connection and stream deadlines, on embedded channels whose clock the
/// test moves.
@Suite("APNs guards", .hangDetector)
struct APNsGuardTests {
    private func connection() throws -> (EmbeddedChannel, APNsConnectionGuard) {
        let connection = APNsConnectionGuard(firstRequestTimeout: .seconds(10), idleTimeout: .seconds(3600), logger: .init(label: "test"))
        return (try .connected([connection]), connection)
    }

    private func stream() throws -> EmbeddedChannel {
        try .connected([APNsStreamGuard(requestTimeout: .seconds(10), logger: .init(label: "test"))])
    }

    private static let request = HPACKHeaders([(":method", "POST"), (":path", "/3/device/ab")])
    private static let response = HPACKHeaders([(":status", "403")])

    @Test func aConnectionWithoutAFirstRequestIsClosed() throws {
        let (channel, _) = try connection()
        channel.expectClosed(after: .seconds(10))
    }

    @Test func aConnectionWithStreamsInFlightIsNotIdle() throws {
        let (channel, connection) = try connection()
        connection.streamOpened(HTTP2StreamID(1))
        channel.embeddedEventLoop.advanceTime(by: .hours(2))
        #expect(channel.isActive)
        connection.answerDelivered()
        connection.streamClosed()
        channel.expectClosed(after: .hours(1))
    }

    @Test func aConnectionWhoseStreamsStallIsClosedDespiteThem() throws {
        let (channel, connection) = try connection()
        // Streams reset one after another for answers the client never takes: still open, but
        // no progress since the first stream.
        connection.streamOpened(HTTP2StreamID(1))
        channel.embeddedEventLoop.advanceTime(by: .seconds(10))
        connection.streamTimedOut()
        connection.streamClosed()
        connection.streamOpened(HTTP2StreamID(3))
        channel.embeddedEventLoop.advanceTime(by: .minutes(59))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .minutes(2))
        #expect(!channel.isActive)
    }

    @Test func aRequestThatDoesNotFinishInTimeIsReset() throws {
        let channel = try stream()
        try channel.writeInbound(HTTP2Frame.FramePayload.headers(.init(headers: Self.request, endStream: false)))
        // Closing an HTTP/2 stream channel while its stream is open sends RST_STREAM.
        channel.expectClosed(after: .seconds(10))
    }

    @Test func anAnswerTheClientDoesNotTakeIsResetAtTheDeadline() throws {
        let channel = try stream()
        try channel.writeInbound(HTTP2Frame.FramePayload.headers(.init(headers: Self.request, endStream: true)))
        // Written but never on the wire, as with a client that grants no flow-control window.
        channel.write(HTTP2Frame.FramePayload.headers(.init(headers: Self.response, endStream: true)), promise: nil)
        channel.expectClosed(after: .seconds(10))
    }

    @Test func aDeliveredAnswerEndsTheDeadline() throws {
        let channel = try stream()
        try channel.writeInbound(HTTP2Frame.FramePayload.headers(.init(headers: Self.request, endStream: true)))
        try channel.writeOutbound(HTTP2Frame.FramePayload.headers(.init(headers: Self.response, endStream: true)))
        channel.embeddedEventLoop.advanceTime(by: .hours(1))
        #expect(channel.isActive)
    }

    @Test func anAnswerBeforeTheRequestEndsIsFollowedByAResetAfterTheGrace() throws {
        let channel = try stream()
        try channel.writeInbound(HTTP2Frame.FramePayload.headers(.init(headers: Self.request, endStream: false)))
        try channel.writeOutbound(HTTP2Frame.FramePayload.headers(.init(headers: Self.response, endStream: true)))
        guard case .headers = try channel.readOutbound(as: HTTP2Frame.FramePayload.self) else {
            Issue.record("The answer went first")
            return
        }
        // The client may still finish sending what it started: nothing yet…
        #expect(try channel.readOutbound(as: HTTP2Frame.FramePayload.self) == nil)
        // …and a request that does not finish within the grace is reset.
        channel.embeddedEventLoop.advanceTime(by: APNsStreamGuard.earlyAnswerGrace)
        guard case .rstStream(let code) = try channel.readOutbound(as: HTTP2Frame.FramePayload.self) else {
            Issue.record("No RST_STREAM after the answer")
            return
        }
        #expect(code == .noError)
    }

    @Test func aRequestThatFinishesWithinTheGraceIsNotReset() throws {
        let channel = try stream()
        try channel.writeInbound(HTTP2Frame.FramePayload.headers(.init(headers: Self.request, endStream: false)))
        try channel.writeOutbound(HTTP2Frame.FramePayload.headers(.init(headers: Self.response, endStream: true)))
        _ = try channel.readOutbound(as: HTTP2Frame.FramePayload.self)
        try channel.writeInbound(HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(ByteBuffer(string: "{}")), endStream: true)))
        channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        #expect(try channel.readOutbound(as: HTTP2Frame.FramePayload.self) == nil)
    }

    @Test func anAnswerAfterTheRequestEndsIsNot() throws {
        let channel = try stream()
        try channel.writeInbound(HTTP2Frame.FramePayload.headers(.init(headers: Self.request, endStream: false)))
        try channel.writeInbound(HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(ByteBuffer(string: "{}")), endStream: true)))
        try channel.writeOutbound(HTTP2Frame.FramePayload.headers(.init(headers: Self.response, endStream: true)))
        _ = try channel.readOutbound(as: HTTP2Frame.FramePayload.self)
        #expect(try channel.readOutbound(as: HTTP2Frame.FramePayload.self) == nil)
    }
}
