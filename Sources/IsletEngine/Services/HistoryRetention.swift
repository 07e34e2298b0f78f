import Foundation
import Logging
import ServiceLifecycle

/// Keeps the store's size bounded: every hour, deletes dismissed activities, events and retired
/// tokens older than the retention period.
struct HistoryRetention: Service {
    let engine: Engine
    let retention: TimeInterval
    let logger: Logger

    func run() async throws {
        let (engine, retention, logger) = (self.engine, self.retention, self.logger)
        await periodically(every: 3600, clock: engine.clock, immediately: true) { error in
            logger.error("Purging history failed", metadata: ["error": "\(error)"])
            return 60
        } _: {
            let purged = try await engine.purgeHistory(olderThan: retention)
            if !purged.isEmpty {
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
