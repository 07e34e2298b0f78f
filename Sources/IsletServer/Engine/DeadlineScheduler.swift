import Foundation
import IsletStore
import Logging
import ServiceLifecycle

/// Makes deadlines happen: sleeps until the earliest stored deadline, lets every due one take
/// effect, and repeats. Deadlines are data in the store, so at start-up it first fires those
/// that passed while the server was down.
final class DeadlineScheduler: Service {
    private let engine: Engine
    private let logger: Logger

    init(engine: Engine, logger: Logger) {
        self.engine = engine
        self.logger = logger
    }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                var next: Date?
                do {
                    let fired = try await self.engine.fireDueDeadlines()
                    if fired > 0 {
                        self.logger.debug("Deadlines fired", metadata: ["activities": "\(fired)"])
                    }
                    next = try await self.engine.store.nextDeadline()
                } catch is CancellationError {
                    // Shutting down: the store refused work for a cancelled task. Not a failure.
                    return
                } catch {
                    // A failing store must not stop the timers for good: retry a little later.
                    self.logger.error("Deadline scheduler failed; retrying in 1s", metadata: ["error": "\(error)"])
                    next = self.engine.clock.now().addingTimeInterval(1)
                }
                await self.engine.deadlines.sleep(until: next, on: self.engine.clock)
            }
        }
    }
}
