import Foundation
import Logging
import ServiceLifecycle

/// Makes deadlines happen: sleeps until the earliest stored deadline, lets every due one take
/// effect, and repeats. Deadlines are data in the store, so at start-up it first fires those
/// that passed while the server was down. A commit that brings a nearer deadline wakes it
/// (`FanOut`), whichever use case made it; on a store shared by several nodes, which does not
/// hear of the others' deadlines, it also looks again every second (`Engine.wakeTime`), and
/// each due deadline is claimed by one node (`dueActivities` in a write transaction).
struct DeadlineScheduler: Service {
    let engine: Engine
    let logger: Logger

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                var next: Date?
                do {
                    let fired = try await engine.fireDueDeadlines()
                    if fired > 0 {
                        logger.debug("Deadlines fired", metadata: ["activities": "\(fired)"])
                    }
                    next = try await engine.nextDeadline()
                } catch is CancellationError {
                    // Shutting down: the store refused work for a cancelled task. Not a failure.
                    return
                } catch {
                    // A failing store must not stop the timers for good: retry a little later.
                    logger.error("Deadline scheduler failed; retrying in 1s", metadata: ["error": "\(error)"])
                    next = engine.clock.now().addingTimeInterval(1)
                }
                await engine.deadlines.sleep(until: engine.wakeTime(next), on: engine.clock)
            }
        }
    }
}
