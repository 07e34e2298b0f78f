import HTTPTypes
import Hummingbird
import IsletCore
import IsletEngine
import Logging
import NIOCore
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
/// A refused request (a wrong key, a bad filter) is answered as the router answered it, and the
/// connection goes on serving requests. A stream that ends (the server shutting down, a reader
/// fallen too far behind) ends its response, and the connection goes on too; a reader that has
/// taken nothing for `streams.writeTimeout`, or whose end has not gone out within `endGrace`,
/// is cut off.
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
    }

    private enum State {
        /// Requests go to Hummingbird.
        case passing
        /// A stream's request is with the router, or its stored events are being replayed.
        case opening(Task<Void, Never>)
        /// Live events are written as they come.
        case streaming(Subscription, EventStream.Cursor)
        /// The stream's end is being written.
        case ending
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
    /// Requests pipelined behind the stream's, passed on once it is answered.
    private var waiting: [HTTPRequestPart] = []
    /// Whether the stream's request asked for the connection to close after it.
    private var closesAfter = false
    /// The server is shutting down: the stream ends, then Hummingbird is told.
    private var quiesced = false
    private var stallTimer: Scheduled<Void>?
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
                case .opening, .ending:
                    // Bounded: a client that pipelines this much behind a stream is not a browser.
                    guard waiting.count < 64 else { return context.close(promise: nil) }
                    waiting.append(part)
                case .passing, .streaming:
                    break  // nothing is answered behind a stream that never ends
                }
            } else if case .end = part {
                requestEnded = true
            }
            return
        }
        if case .head(let head) = part, Self.isEventStream(head) {
            return open(head, context: context)
        }
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        switch state {
        case .opening(let task): task.cancel()
        case .streaming(let subscription, _): serving.bus.remove(subscription)
        case .passing, .ending: break
        }
        state = .ending
        stallTimer?.cancel()
        wake = nil
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is ChannelShouldQuiesceEvent else { return context.fireUserInboundEventTriggered(event) }
        switch state {
        case .passing:
            context.fireUserInboundEventTriggered(event)
        case .opening, .ending:
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
        requestEnded = false
        // As HTTP/1.1 says: `Connection: close`, or HTTP/1.0 without `keep-alive`.
        let connection = head.headerFields[.connection]?.lowercased()
        let http10 = head.headerFields[KeylessAccess.requestVersionField] == "HTTP/1.0"
        closesAfter = connection == "close" || (http10 && connection != "keep-alive")
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
            try await write([.head(head), .body(ByteBuffer(string: "retry: 1000\n: connected\n\n"))], through: bound)
            let cursor = try await stream.replay { events in
                try await write([.body(EventRoutes.serverSentEventFrames(events))], through: bound)
            }
            try await loop.submit { bound.value.handler.goLive(subscription, cursor, context: bound.value.context) }.get()
        } catch {
            // The client left, or the store could not replay: the connection ends.
            serving.bus.remove(subscription)
            serving.logger.debug("Event stream ended while it opened", metadata: ["error": "\(error)"])
            _ = try? await loop.submit { bound.value.context.close(promise: nil) }.get()
        }
    }

    /// Writes response parts from the opening task, and waits until they are flushed.
    private static func write(
        _ parts: [HTTPResponsePart], through bound: Place
    ) async throws {
        try await bound.eventLoop.flatSubmit {
            let context = bound.value.context
            for part in parts.dropLast() { context.write(NIOAny(part), promise: nil) }
            return context.writeAndFlush(NIOAny(parts[parts.count - 1]))
        }.get()
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

    // MARK: Streaming

    private func goLive(_ subscription: Subscription, _ cursor: EventStream.Cursor, context: ChannelHandlerContext) {
        guard case .opening = state else {
            // The connection closed while the stream opened.
            return serving.bus.remove(subscription)
        }
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
                    context.write(wrapOutboundOut(.body(EventRoutes.serverSentEventFrames(fresh))), promise: nil)
                    wrote = true
                }
            case .idle:
                context.write(wrapOutboundOut(.body(ByteBuffer(string: ": keep-alive\n\n"))), promise: nil)
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
        context.write(
            wrapOutboundOut(.body(ByteBuffer(string: ": stream ended (\(reason.rawValue)); reconnect with Last-Event-ID\n\n"))),
            promise: nil
        )
        let written = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: written)
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
