import IsletCore
import Logging
import NIOCore

/// Answers a connection over the REST port's cap: `503` with reason `unavailable` as soon as the
/// client starts sending its request (or after `patience` of silence), then a lingering close —
/// the rest of the request is read and dropped until the client closes or `patience` passes
/// again — so the answer is not lost to the reset a close with unread input would cause.
final class ConnectionRefusal: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    /// How long the refusal waits for the client, before answering and before closing.
    static let patience: TimeAmount = .seconds(1)

    private let limit: Int
    private let logger: Logger
    private var answered = false
    private var timer: Scheduled<Void>?

    init(limit: Int, logger: Logger) {
        self.limit = limit
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        logger.debug("Connection refused: the port is at its cap", metadata: ["limit": "server.maxConnections = \(limit)"])
        wait(context) { [self] in answer(context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if !answered { answer(context) }
    }

    private func answer(_ context: ChannelHandlerContext) {
        answered = true
        let refusal = IsletError(
            .unavailable,
            "The server has \(limit) connections open, its limit (server.maxConnections); try again in a moment."
        )
        refusal.writeClosingResponse(to: context, headers: [("Retry-After", "1")]).assumeIsolated().whenComplete { [self] _ in
            context.close(mode: .output, promise: nil)
            wait(context) { context.close(promise: nil) }
        }
    }

    private func wait(_ context: ChannelHandlerContext, then action: @escaping () -> Void) {
        timer?.cancel()
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: Self.patience, action)
    }
}
