import Foundation
import HTTPTypes
import IsletAPNs
import IsletCore
import IsletEngine
import Logging
import NIOCore
import NIOHTTPTypes

/// docs/engine.md §9.1 on the APNs port: `POST /3/device/{token}` served in its HTTP/2 stream's
/// pipeline, with no task — its checks run on the stream's event loop, the push goes to the
/// writer with a completion (`Engine.submitDelivery`), and the answer is written there once the
/// commit is published. On with `server.hotRoutes`, while no fault is configured
/// (`apns.faults`: the fault middleware is the route's).
///
/// It serves only a push whose provider token the verifier already remembers (the route
/// verifies and remembers one it does not), and passes every other request on to the routes
/// unchanged. What it serves goes through the route's own pieces, in the route's order:
/// `PushHeaders.device`, `APNsRoutes.verifyRemembered` and `check`, the payload's limit,
/// `APNsRoutes.devicePush`, `accepted`, a refusal rendered as `APNsErrorMiddleware` renders it,
/// and the request's line in the endpoint's log (`APNsRequestRecorder.entry` and `finished`).
final class APNsHotPush: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundOut = HTTPResponsePart

    /// What every stream's handler shares.
    struct Serving: Sendable {
        let routes: APNsRoutes
        let log: APNsRequestLog
        let logger: Logger
    }

    private enum State {
        /// Waiting for the stream's request.
        case idle
        /// Not served here: every part goes on to the routes.
        case passing
        /// A push being read, its head's checks passed: its payload so far, up to Apple's limit.
        case reading(Push)
        /// Handed to the writer, or answered.
        case answering
    }

    private struct Push: Sendable {
        var head: HTTPRequest
        var headers: PushHeaders?
        var token: String
        var bundleId: BundleID?
        var refusal: APNsError?
        var body: ByteBuffer
        var entry: APNsRequestEntry
        let started: ContinuousClock.Instant
        let payload = PayloadCopy(keeping: APNsRequestRecorder.payloadShown)
        let trace = APNsRequestTrace()
    }

    private static let prefix = "/3/device/"

    private let serving: Serving
    private var state = State.idle

    init(serving: Serving) {
        self.serving = serving
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        switch state {
        case .passing:
            context.fireChannelRead(data)
        case .answering:
            return
        case .idle:
            guard case .head(let head) = part, let push = take(head, connection: context.channel.parent) else {
                state = .passing
                return context.fireChannelRead(data)
            }
            if let refusal = push.refusal {
                // Refused by its head, as the route refuses it: before its payload is read.
                state = .answering
                return answer(push, .failure(refusal), context: context)
            }
            state = .reading(push)
        case .reading(var push):
            switch part {
            case .head:
                return
            case .body(var buffer):
                push.payload.add(buffer)
                guard push.body.readableBytes + buffer.readableBytes <= APNsRoutes.maxDevicePayload else {
                    // Refused once it is over, as the route refuses it: the rest is not waited for.
                    state = .answering
                    return answer(push, .failure(APNsRoutes.payloadTooLarge(APNsRoutes.maxDevicePayload)), context: context)
                }
                push.body.writeBuffer(&buffer)
                state = .reading(push)
            case .end:
                state = .answering
                serve(push, context: context)
            }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        // The client reset the stream, or it outlived apns.requestTimeout, before its payload
        // arrived: nobody hears an answer, and the log says what the route's would.
        if case .reading(let push) = state {
            state = .answering
            answer(push, .failure(APNsError.badRequestPayload("The stream closed before its payload arrived.")), context: context)
        }
        context.fireChannelInactive()
    }

    /// The push `head` begins, with the checks its head passes or fails, if it is one served
    /// here: `POST /3/device/<token>` whose provider token the verifier remembers.
    private func take(_ head: HTTPRequest, connection: (any Channel)?) -> Push? {
        guard head.method == .post, let path = head.path, path.hasPrefix(Self.prefix) else { return nil }
        let token = String(path.dropFirst(Self.prefix.count))
        // What the router would read otherwise (a query, an escape, more of a path) is its own.
        guard !token.isEmpty, !token.contains(where: { $0 == "/" || $0 == "?" || $0 == "%" }) else { return nil }
        let routes = serving.routes
        var push = Push(
            head: head, token: token, body: ByteBuffer(),
            entry: APNsRequestRecorder.entry(method: head.method, path: path, fields: head.headerFields, at: routes.engine.clock.now()),
            started: .now
        )
        do {
            let headers = try PushHeaders.device(head.headerFields)
            push.headers = headers
            guard let identity = try routes.verifyRemembered(head.headerFields, trace: push.trace, connection: connection) else { return nil }
            push.bundleId = try routes.check(headers, identity: identity, token: token)
        } catch {
            push.refusal = APNsErrorMiddleware.refusal(for: error, path: path, logger: serving.logger)
        }
        return push
    }

    /// The request read to its end: refused, or handed to the writer and answered once its
    /// commit is published.
    private func serve(_ push: Push, context: ChannelHandlerContext) {
        guard let headers = push.headers, let bundleId = push.bundleId else { return }
        let devicePush = APNsRoutes.devicePush(headers, bundleId: bundleId, token: push.token, body: Data(push.body.readableBytesView))
        let bound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        let serving = self.serving
        serving.routes.engine.submitDelivery(devicePush) { result in
            let answered: Result<HTTPFields, APNsError>
            do {
                let pushed = try result.get()
                push.trace.pushed(pushed)
                answered = .success(try APNsRoutes.accepted(headers, pushed))
            } catch let refusal as PushRefusal {
                answered = .failure(APNsErrorMiddleware.refusal(for: APNsError(refusal), path: push.entry.path, logger: serving.logger))
            } catch {
                answered = .failure(APNsErrorMiddleware.refusal(for: error, path: push.entry.path, logger: serving.logger))
            }
            bound.eventLoop.execute { bound.value.handler.answer(push, answered, context: bound.value.context) }
        }
    }

    /// Writes the answer, as the routes would, and the request's line in the log.
    private func answer(_ push: Push, _ answered: Result<HTTPFields, APNsError>, context: ChannelHandlerContext) {
        var entry = push.entry
        var fields: HTTPFields
        var body: ByteBuffer?
        let status: HTTPResponse.Status
        switch answered {
        case .success(let accepted):
            (status, fields) = (.ok, accepted)
        case .failure(let refusal):
            let (rendered, data) = refusal.rendered(path: entry.path, fields: push.head.headerFields)
            (status, fields, body) = (refusal.status, rendered, ByteBuffer(bytes: data))
            (entry.reason, entry.detail) = (refusal.reason, refusal.detail)
        }
        entry.status = Int(status.code)
        serving.log.record(APNsRequestRecorder.finished(entry, startedAt: push.started, payload: push.payload, trace: push.trace))
        fields[.contentLength] = String(body?.readableBytes ?? 0)
        fields[.date] = HTTPDate.now
        guard context.channel.isActive else { return }
        context.write(wrapOutboundOut(.head(HTTPResponse(status: status, headerFields: fields))), promise: nil)
        if let body { context.write(wrapOutboundOut(.body(body)), promise: nil) }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}
