import NIOCore
import NIOHTTP2

/// Ends each APNs response stream on its last real frame, as Apple's servers do.
///
/// NIO's HTTP/2 server codec ends every response with an extra, empty DATA frame carrying
/// END_STREAM: a `200` goes out as HEADERS + DATA(empty), an error as HEADERS + DATA(body) +
/// DATA(empty). That is valid HTTP/2, but APNs never sends it, and providers written against
/// APNs trip over it — aioapns, for one, parses every DATA frame as JSON and drops the
/// connection. This handler, placed between the stream channel and that codec, holds back the
/// most recent HEADERS or DATA frame and, when the empty closing frame follows, sets END_STREAM
/// on the held frame instead: a `200` becomes one HEADERS frame, an error HEADERS + DATA.
final class EndStreamOnLastFrame: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    private var held: (frame: HTTP2Frame.FramePayload, promise: EventLoopPromise<Void>?)?

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let frame = unwrapOutboundIn(data)
        if var last = held, Self.isEmptyEnd(frame), let ended = Self.ending(last.frame) {
            held = nil
            last.promise.setOrCascade(to: promise)
            return context.write(wrapOutboundOut(ended), promise: last.promise)
        }
        writeHeld(context: context)
        if Self.ending(frame) != nil {
            held = (frame, promise)
        } else {
            context.write(data, promise: promise)
        }
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        writeHeld(context: context)
        context.flush()
        context.close(mode: mode, promise: promise)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        writeHeld(context: context)
    }

    private func writeHeld(context: ChannelHandlerContext) {
        guard let last = held else { return }
        held = nil
        context.write(wrapOutboundOut(last.frame), promise: last.promise)
    }

    /// The frame with END_STREAM set, if it is one that can carry it and does not yet.
    private static func ending(_ frame: HTTP2Frame.FramePayload) -> HTTP2Frame.FramePayload? {
        switch frame {
        case .headers(var headers) where !headers.endStream:
            headers.endStream = true
            return .headers(headers)
        case .data(var data) where !data.endStream:
            data.endStream = true
            return .data(data)
        default:
            return nil
        }
    }

    private static func isEmptyEnd(_ frame: HTTP2Frame.FramePayload) -> Bool {
        guard case .data(let data) = frame, data.endStream, data.paddingBytes == nil else { return false }
        switch data.data {
        case .byteBuffer(let buffer): return buffer.readableBytes == 0
        case .fileRegion(let region): return region.readableBytes == 0
        }
    }
}
