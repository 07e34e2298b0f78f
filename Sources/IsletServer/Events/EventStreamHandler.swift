import HTTPTypes
import Hummingbird
import IsletCore
import IsletEngine
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import Synchronization

/// Serves `GET /v1/events` (Server-Sent Events) from the connection's pipeline, so that a
/// subscriber held open for hours costs its connection and its queue, and no task.
///
/// Hummingbird runs each connection as a task, and Swift keeps a task's frame memory at its
/// deepest until the task ends: a stream written from the route's handler held ~18 KB of frames
/// for its whole life, more than half of what a subscriber cost (docs/engine.md §8). Here the
/// request never reaches the connection's task, which stays where it waits for a request:
///
/// 1. the request goes through the same router, middleware and route as any other, in a task
///    of its own (`open`): key, known queries, the stream's filter, logging, metrics, errors;
/// 2. the route hands its `EventStream` over (`EventStreamHandover`) instead of a body; this
///    handler writes the head, subscribes and replays the stored events the client missed;
/// 3. that task ends, and the live stream runs on the connection's event loop: the
///    subscription calls back when events come (`Subscription.poll(orWake:)`), and they are
///    written while the connection can take them. A reader that stops reading leaves them in
///    its subscription, where content updates coalesce and an overflow ends the stream, as
///    for every transport.
///
/// A stream's request that comes while Hummingbird still answers requests before it on the
/// connection (pipelined, or sent once the last byte of a response with a length had gone but
/// before its end reached the encoder) is held until their answers have ended: its head would
/// go out among them, and an earlier answer's late end would end the stream's chunked body
/// (issue 58's "invalid constant string").
///
/// A refused request (a wrong key, a bad filter) is answered as the router answered it, and the
/// connection goes on serving requests. A stream that ends (the server shutting down, a reader
/// fallen too far behind) ends its response, and the connection goes on too — but when a
/// request was pipelined behind the live stream, which is not read, the connection closes once
/// the stream has ended, so the client sends it again rather than take the next answer for
/// its own. A reader that has taken nothing for `streams.writeTimeout`, or whose end has not
/// gone out within `endGrace`, is cut off.
///
/// A stream asked for with HTTP/1.0 (nginx's default `proxy_http_version`) is written raw,
/// below the HTTP encoder, which would frame it as chunked — which RFC 9112 forbids for a
/// 1.0 request: its body runs to the connection's close, and the connection closes at its end.
final class EventStreamHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// What every connection's handler shares.
    struct Serving: Sendable {
        let responder: RouterResponder<IsletRequestContext>
        let bus: EventBus
        let writeTimeout: TimeAmount
        var endGrace: TimeAmount = .seconds(5)
        let logger: Logger
        /// The routes served on the loop (docs/engine.md §9.1), when on.
        var hot: HotRoutes? = nil
    }

    private enum State {
        /// Requests go to Hummingbird.
        case passing
        /// A stream's request waits for Hummingbird's answers to the requests before it (`unanswered`).
        case held(HTTPRequest)
        /// A stream's request is with the router, or its stored events are being replayed.
        case opening(Task<Void, Never>)
        /// Live events are written as they come.
        case streaming(Subscription, EventStream.Cursor)
        /// The stream's end is being written.
        case ending
        /// A hot request's body is being read (`HotRoutes`).
        case hot(HTTPRequest, HotRoutes.Taken, ByteBuffer)
        /// A hot request waits for its commit, then is answered here.
        case hotAnswering
    }

    /// The handler and its context, used from the opening task on their event loop.
    private struct Connection {
        let handler: EventStreamHandler
        let context: ChannelHandlerContext
    }

    private typealias Place = NIOLoopBound<Connection>

    private let serving: Serving
    private var state = State.passing
    /// Whether the stream's request has been read to its end; what comes after it is another request.
    private var requestEnded = false
    /// Requests passed on to Hummingbird whose answer has not ended yet (its `.end` has not been
    /// written through here): a stream's request waits for them (`held`).
    private var unanswered = 0
    /// Requests pipelined behind the stream's, passed on once it is answered.
    private var waiting: [HTTPRequestPart] = []
    /// Whether the connection closes after the stream: its request asked for it, it was
    /// HTTP/1.0, or a request was pipelined behind it while it was live.
    private var closesAfter = false
    /// The stream's request was HTTP/1.0: its response is written raw, not chunked (`emit`).
    private var raw = false
    /// The server is shutting down: the stream ends, then Hummingbird is told.
    private var quiesced = false
    /// The server is shutting down: requests go to Hummingbird, which closes the connection
    /// after its answer, and none is served here any more.
    private var declinesHot = false
    private var stallTimer: Scheduled<Void>?
    /// The hot request being answered, for its log line and metrics.
    private var hotRequest: HotRoutes.Taken?
    private var wake: (@Sendable () -> Void)?

    init(serving: Serving) {
        self.serving = serving
    }

    /// Whether a request is for the event stream: what the router sends to `EventRoutes`'s
    /// `serverSentEvents`.
    static func isEventStream(_ head: HTTPRequest) -> Bool {
        guard head.method == .get, let path = head.path else { return false }
        let route = path.prefix { $0 != "?" }
        return route == "/v1/events" || route == "/v1/events/"
    }

    // MARK: Reading

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        guard case .passing = state else {
            if requestEnded {
                switch state {
                case .held, .opening, .ending, .hot, .hotAnswering:
                    // Bounded: a client that pipelines this much behind a stream is not a browser.
                    guard waiting.count < 64 else { return context.close(promise: nil) }
                    waiting.append(part)
                case .passing, .streaming:
                    // Nothing is read behind a stream that may last for hours: the connection
                    // closes once the stream ends, unanswered, and the client asks again.
                    closesAfter = true
                }
            } else if case .hot(let head, let taken, var body) = state {
                switch part {
                case .head: context.close(promise: nil)
                case .body(let bytes):
                    // The state lets go of the buffer while it grows, so it is not copied (NIO's
                    // decoder hands on no more than the stated `Content-Length`).
                    state = .passing
                    body.writeImmutableBuffer(bytes)
                    state = .hot(head, taken, body)
                case .end:
                    requestEnded = true
                    serveHot(head, taken, body, context: context)
                }
            } else if case .end = part {
                requestEnded = true
            }
            return
        }
        if case .head(let head) = part {
            if Self.isEventStream(head) {
                requestEnded = false
                guard unanswered == 0 else {
                    state = .held(head)
                    return
                }
                return open(head, context: context)
            }
            if let hot = serving.hot, unanswered == 0, !declinesHot, let taken = hot.takes(head) {
                requestEnded = false
                closesAfter = taken.closes
                hot.metrics.began(taken.operation)
                state = .hot(head, taken, context.channel.allocator.buffer(capacity: 512))
                return
            }
            unanswered += 1
        }
        context.fireChannelRead(data)
    }

    /// Hummingbird's answers pass here on their way to the encoder (the stream's own parts are
    /// written from this handler, below it): the end of the last one it owes opens a held stream.
    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        context.write(data, promise: promise)
        guard case .end = unwrapOutboundIn(data) else { return }
        unanswered = max(0, unanswered - 1)
        if unanswered == 0, case .held(let head) = state { open(head, context: context) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        switch state {
        case .opening(let task): task.cancel()
        case .streaming(let subscription, _): serving.bus.remove(subscription)
        // The client left before its hot request was read; one being answered is counted when it is.
        case .hot(_, let taken, _): serving.hot?.metrics.notServed(taken.operation)
        case .passing, .held, .ending, .hotAnswering: break
        }
        state = .ending
        stallTimer?.cancel()
        wake = nil
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is ChannelShouldQuiesceEvent else { return context.fireUserInboundEventTriggered(event) }
        declinesHot = true
        switch state {
        case .passing:
            context.fireUserInboundEventTriggered(event)
        case .held, .opening, .ending, .hot, .hotAnswering:
            quiesced = true
        case .streaming(let subscription, _):
            quiesced = true
            subscription.finish(.shutdown)
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            stallTimer?.cancel()
            stallTimer = nil
            pump(context: context)
        } else if case .streaming = state, stallTimer == nil {
            // Nothing more is taken from the subscription until the reader reads; if it never
            // does, the connection is cut off and the subscription with it.
            stallTimer = context.eventLoop.assumeIsolated().scheduleTask(in: serving.writeTimeout) {
                context.close(promise: nil)
            }
        }
        context.fireChannelWritabilityChanged()
    }

    // MARK: Opening

    /// Runs the request through the router in a task of its own; a stream then replays what the
    /// client missed and goes live on this loop, and the task ends.
    private func open(_ head: HTTPRequest, context: ChannelHandlerContext) {
        // As HTTP/1.1 says: `Connection: close`, or HTTP/1.0 without `keep-alive`.
        let connection = head.headerFields[.connection]?.lowercased()
        raw = head.headerFields[KeylessAccess.requestVersionField] == "HTTP/1.0"
        closesAfter = connection == "close" || raw
        let serving = self.serving
        let channel = context.channel
        let bound = Place(Connection(handler: self, context: context), eventLoop: context.eventLoop)
        state = .opening(Self.opening(head, on: channel, serving: serving, through: bound))
    }

    /// The task is made here, not in `open`: Swift 6.3's region-based isolation checker fails
    /// ("a pattern it does not understand") on a `Task` made inside a handler's method.
    private static func opening(_ head: HTTPRequest, on channel: any Channel, serving: Serving, through bound: Place) -> Task<Void, Never> {
        Task { await serve(head, on: channel, serving: serving, through: bound) }
    }

    /// The opening task: the router's answer, and for a stream its head and the stored events.
    private static func serve(_ head: HTTPRequest, on channel: any Channel, serving: Serving, through bound: Place) async {
        let loop = bound.eventLoop
        let handover = EventStreamHandover()
        var requestContext = IsletRequestContext(source: .init(channel: channel, logger: serving.logger))
        requestContext.eventStreamHandover = handover
        let request = Request(head: head, body: RequestBody(buffer: ByteBuffer()))
        let response: Response
        do {
            response = try await serving.responder.respond(to: request, context: requestContext)
        } catch {
            serving.logger.debug("Event stream request failed", metadata: ["error": "\(error)"])
            response = IsletError(.internalError, "The server failed to handle the request; its log says why.").response()
        }
        guard response.status == .ok, let stream = handover.take() else {
            return await answer(response, through: bound)
        }
        // Registered before the store is read, so nothing committed in between is missed.
        let subscription = stream.subscribe()
        do {
            var head = HTTPResponse(status: .ok, headerFields: response.headers)
            head.headerFields[.contentLength] = nil
            try await write([.head(head), .body(ByteBuffer(string: "retry: 1000\n: connected\n\n"))], through: bound, stream: true)
            let cursor = try await stream.replay { events in
                try await write([.body(EventRoutes.serverSentEventFrames(events))], through: bound, stream: true)
            }
            try await loop.submit { bound.value.handler.goLive(subscription, cursor, context: bound.value.context) }.get()
        } catch {
            // The client left, or the store could not replay: the connection ends.
            serving.bus.remove(subscription)
            serving.logger.debug("Event stream ended while it opened", metadata: ["error": "\(error)"])
            _ = try? await loop.submit { bound.value.context.close(promise: nil) }.get()
        }
    }

    /// Writes response parts from the opening task, and waits until they are flushed: the
    /// stream's as the stream is written (`emit`), a refusal's as Hummingbird would.
    private static func write(
        _ parts: [HTTPResponsePart], through bound: Place, stream: Bool = false
    ) async throws {
        try await bound.eventLoop.flatSubmit {
            let (handler, context) = (bound.value.handler, bound.value.context)
            let flushed = context.eventLoop.makePromise(of: Void.self)
            for (index, part) in parts.enumerated() {
                let promise = index == parts.count - 1 ? flushed : nil
                if stream { handler.emit(part, context: context, promise: promise) } else { context.write(NIOAny(part), promise: promise) }
            }
            context.flush()
            return flushed.futureResult
        }.get()
    }

    /// Writes a part of the stream's response: through the HTTP codec, or for an HTTP/1.0
    /// request raw, below the encoder (`raw`): the head without `Transfer-Encoding`, with
    /// `Connection: close`, the body as it is, and no end but the connection's close.
    private func emit(_ part: HTTPResponsePart, context: ChannelHandlerContext, promise: EventLoopPromise<Void>?) {
        guard raw else { return context.write(wrapOutboundOut(part), promise: promise) }
        guard let encoder = try? context.pipeline.syncOperations.context(handlerType: HTTPResponseEncoder.self) else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return context.close(promise: nil)
        }
        let bytes: ByteBuffer
        switch part {
        case .head(let head): bytes = Self.rawHead(head)
        case .body(let body): bytes = body
        case .end: bytes = ByteBuffer()
        }
        encoder.write(NIOAny(IOData.byteBuffer(bytes)), promise: promise)
    }

    /// An event stream's head, as HTTP/1.1 writes it to an HTTP/1.0 client: no length, no
    /// transfer coding, the body delimited by the connection's close.
    static func rawHead(_ head: HTTPResponse) -> ByteBuffer {
        var text = "HTTP/1.1 \(head.status.code) \(head.status.reasonPhrase)\r\n"
        for field in head.headerFields where ![.transferEncoding, .contentLength, .connection].contains(field.name) {
            text += "\(field.name.rawName): \(field.value)\r\n"
        }
        text += "Connection: close\r\n\r\n"
        return ByteBuffer(string: text)
    }

    /// Writes a refusal (or any answer that is not a stream) as Hummingbird would have, and lets
    /// the connection serve its next request.
    private static func answer(
        _ response: Response, through bound: Place
    ) async {
        do {
            try await write([.head(response.head)], through: bound)
            try await response.body.write(PartWriter(bound: bound))
        } catch {
            // The client left; `answered` finds the connection closed.
        }
        _ = try? await bound.eventLoop.submit { bound.value.handler.answered(context: bound.value.context) }.get()
    }

    /// A body written from the opening task, part by part.
    private struct PartWriter: ResponseBodyWriter {
        let bound: Place

        mutating func write(_ buffer: ByteBuffer) async throws {
            try await EventStreamHandler.write([.body(buffer)], through: bound)
        }

        mutating func write(contentsOf buffers: some Sequence<ByteBuffer>) async throws {
            let parts = buffers.map { HTTPResponsePart.body($0) }
            if !parts.isEmpty { try await EventStreamHandler.write(parts, through: bound) }
        }

        consuming func finish(_ trailingHeaders: HTTPFields?) async throws {
            try await EventStreamHandler.write([.end(trailingHeaders)], through: bound)
        }
    }

    // MARK: Hot routes (docs/engine.md §9.1)

    /// A hot request read to its end: passed on to the route as it came, refused, or handed to
    /// the writer and answered here once its commit is published.
    private func serveHot(_ head: HTTPRequest, _ taken: HotRoutes.Taken, _ body: ByteBuffer, context: ChannelHandlerContext) {
        guard let hot = serving.hot else { return }
        switch hot.prepare(taken, body: body) {
        case .pass:
            // The route counts it in Hummingbird's metrics.
            hot.metrics.notServed(taken.operation)
            state = .passing
            unanswered += 1
            context.fireChannelRead(wrapInboundOut(.head(head)))
            if body.readableBytes > 0 { context.fireChannelRead(wrapInboundOut(.body(body))) }
            context.fireChannelRead(wrapInboundOut(.end(nil)))
            context.fireChannelReadComplete()
        case .refuse(let error):
            state = .hotAnswering
            hotRequest = taken
            writeHot(HotRoutes.Answer(error), context: context)
        case .submit(let input, let id, let owner):
            let write = answering(taken, context: context)
            hot.engine.submit(input, to: id, owner: owner) { write(HotRoutes.answer($0)) }
        case .registerToken(let body, let id, let owner):
            let write = answering(taken, context: context)
            hot.engine.submitUpdateToken(body.token, deviceId: body.device, activityId: id, owner: owner) { write(HotRoutes.answer($0)) }
        }
    }

    /// `taken` is handed to the writer: what writes its answer, from any thread, on the loop.
    private func answering(_ taken: HotRoutes.Taken, context: ChannelHandlerContext) -> @Sendable (HotRoutes.Answer) -> Void {
        state = .hotAnswering
        hotRequest = taken
        let bound = Place(Connection(handler: self, context: context), eventLoop: context.eventLoop)
        return { answer in bound.eventLoop.execute { bound.value.handler.writeHot(answer, context: bound.value.context) } }
    }

    private func writeHot(_ answer: HotRoutes.Answer, context: ChannelHandlerContext) {
        guard let request = hotRequest else { return }
        hotRequest = nil
        serving.hot?.metrics.answered(request.operation, answer, startedAt: request.started)
        RequestLogging.log(method: request.operation.method.rawValue, path: request.path, status: Int(answer.status.code), logger: serving.logger)
        guard case .hotAnswering = state, context.channel.isActive else { return }
        var body = context.channel.allocator.buffer(capacity: answer.body.utf8.count + 1)
        body.writeString(answer.body)
        body.writeInteger(UInt8(ascii: "\n"))
        let head = HTTPResponse(status: answer.status, headerFields: [
            .contentType: "application/json; charset=utf-8", .contentLength: String(body.readableBytes), .date: HTTPDate.now, .server: "Islet",
        ])
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(body)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        answered(context: context)
    }

    // MARK: Streaming

    private func goLive(_ subscription: Subscription, _ cursor: EventStream.Cursor, context: ChannelHandlerContext) {
        guard case .opening = state else {
            // The connection closed while the stream opened.
            return serving.bus.remove(subscription)
        }
        // What was pipelined behind the stream is not answered: the connection closes after it.
        if !waiting.isEmpty { closesAfter = true }
        waiting = []
        state = .streaming(subscription, cursor)
        let bound = Place(Connection(handler: self, context: context), eventLoop: context.eventLoop)
        wake = { bound.eventLoop.execute { bound.value.handler.pump(context: bound.value.context) } }
        if quiesced { subscription.finish(.shutdown) }
        pump(context: context)
    }

    /// Writes what the subscription holds while the connection can take it; asks to be woken
    /// when there is more.
    private func pump(context: ChannelHandlerContext) {
        guard case .streaming(let subscription, var cursor) = state, let wake else { return }
        var wrote = false
        while context.channel.isWritable, let delivery = subscription.poll(orWake: wake) {
            switch delivery {
            case .events(let events):
                if let fresh = cursor.fresh(events) {
                    emit(.body(EventRoutes.serverSentEventFrames(fresh)), context: context, promise: nil)
                    wrote = true
                }
            case .idle:
                emit(.body(ByteBuffer(string: ": keep-alive\n\n")), context: context, promise: nil)
                wrote = true
            case .finished(let reason):
                return end(reason, context: context)
            }
        }
        state = .streaming(subscription, cursor)
        if wrote { context.flush() }
    }

    /// Ends the stream's response; the connection then serves its next request, or closes if the
    /// request asked for it.
    private func end(_ reason: Subscription.FinishReason, context: ChannelHandlerContext) {
        state = .ending
        wake = nil
        guard reason != .cancelled else { return }
        emit(.body(ByteBuffer(string: ": stream ended (\(reason.rawValue)); reconnect with Last-Event-ID\n\n")), context: context, promise: nil)
        let written = context.eventLoop.makePromise(of: Void.self)
        emit(.end(nil), context: context, promise: written)
        context.flush()
        // A reader that takes nothing is not waited for.
        let grace = context.eventLoop.assumeIsolated().scheduleTask(in: serving.endGrace) { context.close(promise: nil) }
        written.futureResult.assumeIsolated().whenComplete { [self] result in
            grace.cancel()
            guard case .success = result else { return }
            answered(context: context)
        }
    }

    /// The stream's request is answered: the connection serves the requests behind it, or closes.
    private func answered(context: ChannelHandlerContext) {
        guard context.channel.isActive else { return }
        if closesAfter {
            state = .ending
            return context.close(promise: nil)
        }
        state = .passing
        stallTimer?.cancel()
        stallTimer = nil
        let waiting = self.waiting
        self.waiting = []
        if quiesced {
            quiesced = false
            context.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        }
        for part in waiting { channelRead(context: context, data: wrapInboundOut(part)) }
        if !waiting.isEmpty { context.fireChannelReadComplete() }
    }
}

/// How `GET /v1/events` hands its stream to the connection's `EventStreamHandler` rather than
/// writing it itself: the route checks the request and prepares the stream; the handler runs it.
final class EventStreamHandover: Sendable {
    private let stream = Mutex<EventStream?>(nil)

    func hand(_ stream: EventStream) {
        self.stream.withLock { $0 = stream }
    }

    func take() -> EventStream? {
        stream.withLock { stream in
            defer { stream = nil }
            return stream
        }
    }
}
