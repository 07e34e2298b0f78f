import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1

/// The REST port's connections: each one counted against the port's cap, held to
/// `InboundDeadlines` by a `RequestGuard` and closed by a `WriteStallGuard` when its client stops
/// taking its answers; one over the cap is answered `503 unavailable` by a
/// `ConnectionRefusal` (or, when too many are being refused already, closed at once).
struct GuardedChildChannel<Inner: ServerChildChannel>: ServerChildChannel {
    enum Value: ServerChildChannelValue {
        case served(Inner.Value)
        case refused(any Channel)

        var channel: any Channel {
            switch self {
            case .served(let value): value.channel
            case .refused(let channel): channel
            }
        }
    }

    let inner: Inner
    let limits: InboundDeadlines.Limits
    /// How long a client may take none of what is written to it (`WriteStallGuard`).
    let writeTimeout: TimeAmount
    let cap: ConnectionCap

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        switch cap.admit(channel) {
        case .serve:
            return inner.setup(channel: channel, logger: logger).flatMapThrowing { value in
                try channel.pipeline.syncOperations.addHandler(RequestGuard(limits: limits, logger: logger))
                try channel.pipeline.syncOperations.addHandler(
                    WriteStallGuard(timeout: writeTimeout, limit: "server.writeTimeout", logger: logger), position: .first
                )
                return .served(value)
            }
        case .refuse:
            return channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(HTTPResponseEncoder())
                try channel.pipeline.syncOperations.addHandler(ConnectionRefusal(limit: cap.limit, logger: logger))
                return .refused(channel)
            }
        case .drop:
            logger.debug("Connection dropped: the port is at its cap and busy refusing others", metadata: ["limit": "server.maxConnections"])
            return channel.eventLoop.makeSucceededFuture(.refused(channel))
        }
    }

    func handle(value: Value, logger: Logger) async {
        switch value {
        case .served(let value): await inner.handle(value: value, logger: logger)
        case .refused(let channel): try? await channel.closeFuture.get()
        }
    }
}
