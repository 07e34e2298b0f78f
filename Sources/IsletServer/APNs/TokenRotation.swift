import Foundation
import IsletStore
import Logging
import ServiceLifecycle

/// Replaces every push token and push-to-start token on a schedule (`apns.tokenRotation`), as
/// devices do now and then, so providers can test that they follow `pushTokenUpdated`.
final class TokenRotation: Service {
    private let engine: Engine
    private let interval: TimeInterval
    private let logger: Logger

    init(engine: Engine, interval: TimeInterval, logger: Logger) {
        self.engine = engine
        self.interval = interval
        self.logger = logger
    }

    func run() async throws {
        let (engine, logger) = (self.engine, self.logger)
        await periodically(every: interval, clock: engine.clock) { error in
            logger.error("Rotating push tokens failed", metadata: ["error": "\(error)"])
            return nil
        } _: {
            let rotated = try await engine.store.rotateAllTokens(now: engine.clock.now())
            logger.info("Rotated push tokens", metadata: ["tokens": "\(rotated)"])
        }
    }
}
