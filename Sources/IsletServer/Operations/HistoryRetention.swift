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
        let (engine, retention, logger) = (self.engine, self.retention, self.logger)
        await periodically(every: 3600, clock: engine.clock, immediately: true) { error in
            logger.error("Purging history failed", metadata: ["error": "\(error)"])
            return 60
        } _: {
            let purged = try await engine.store.purge(before: engine.clock.now().addingTimeInterval(-retention))
            if purged.activities + purged.events + purged.tokens > 0 {
                logger.info(
                    "Purged history older than the retention period",
                    metadata: [
                        "activities": "\(purged.activities)", "events": "\(purged.events)", "retiredTokens": "\(purged.tokens)",
                    ]
                )
            }
        }
    }
}
