import Foundation
import Logging
import ServiceLifecycle

/// Keeps the store's size bounded: every hour — or every tenth of the retention period when that
/// is shorter — deletes what is older than the retention period: dismissed activities, events
/// (the delivery log's lines among them), retired tokens and finished deliveries.
struct HistoryRetention: Service {
    let engine: Engine
    let retention: TimeInterval
    let logger: Logger

    func run() async throws {
        let (engine, retention, logger) = (self.engine, self.retention, self.logger)
        await periodically(every: Self.interval(retention: retention), clock: engine.clock, immediately: true) { error in
            logger.error("Purging history failed", metadata: ["error": "\(error)"])
            return 60
        } _: {
            let purged = try await engine.purgeHistory(olderThan: retention)
            if !purged.isEmpty {
                logger.info(
                    "Purged history older than the retention period",
                    metadata: [
                        "activities": "\(purged.activities)", "events": "\(purged.events)", "tokens": "\(purged.tokens)",
                        "deliveries": "\(purged.deliveries)", "webhookAttempts": "\(purged.webhookAttempts)",
                    ]
                )
            }
        }
    }

    /// How often it purges: hourly, or ten times per retention period when that is shorter (what
    /// passed retention is deleted within a tenth of it), at least every second.
    static func interval(retention: TimeInterval) -> TimeInterval {
        min(3600, max(1, retention / 10))
    }
}
