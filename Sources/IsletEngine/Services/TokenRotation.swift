import Foundation
import Logging
import ServiceLifecycle

/// Replaces every push token and push-to-start token on a schedule (`apns.tokenRotation`), as
/// devices do now and then, so providers can test that they follow `pushTokenUpdated`.
struct TokenRotation: Service {
    let engine: Engine
    let interval: TimeInterval
    let logger: Logger

    func run() async throws {
        let (engine, logger) = (self.engine, self.logger)
        await periodically(every: interval, clock: engine.clock) { error in
            logger.error("Rotating push tokens failed", metadata: ["error": "\(error)"])
            return nil
        } _: {
            let rotated = try await engine.rotateAllTokens()
            logger.info("Rotated push tokens", metadata: ["tokens": "\(rotated)"])
        }
    }
}
