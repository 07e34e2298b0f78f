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
        await cancelWhenGracefulShutdown {
            var next = self.engine.clock.now().addingTimeInterval(self.interval)
            while !Task.isCancelled {
                do {
                    try await self.engine.clock.sleep(until: next)
                    let rotated = try await self.engine.store.rotateAllTokens(now: self.engine.clock.now())
                    self.logger.info("Rotated push tokens", metadata: ["tokens": "\(rotated)"])
                } catch is CancellationError {
                    return
                } catch {
                    self.logger.error("Rotating push tokens failed", metadata: ["error": "\(error)"])
                }
                next = max(next.addingTimeInterval(self.interval), self.engine.clock.now())
            }
        }
    }
}
