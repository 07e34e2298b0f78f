import Foundation
import IsletStore
import Logging
import ServiceLifecycle

/// Keeps the store's size bounded: every hour, deletes dismissed activities and events older
/// than the retention period.
final class HistoryRetention: Service {
    private let engine: Engine
    private let retention: TimeInterval
    private let logger: Logger

    init(engine: Engine, retention: TimeInterval, logger: Logger) {
        self.engine = engine
        self.retention = retention
        self.logger = logger
    }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    let cutoff = self.engine.clock.now().addingTimeInterval(-self.retention)
                    let purged = try await self.engine.store.purge(before: cutoff)
                    if purged.activities + purged.events + purged.tokens > 0 {
                        self.logger.info(
                            "Purged history older than the retention period",
                            metadata: [
                                "activities": "\(purged.activities)", "events": "\(purged.events)",
                                "retiredTokens": "\(purged.tokens)",
                            ]
                        )
                    }
                    try await self.engine.clock.sleep(until: self.engine.clock.now().addingTimeInterval(3600))
                } catch is CancellationError {
                    return
                } catch {
                    self.logger.error("Purging history failed", metadata: ["error": "\(error)"])
                    try? await self.engine.clock.sleep(until: self.engine.clock.now().addingTimeInterval(60))
                }
            }
        }
    }
}
