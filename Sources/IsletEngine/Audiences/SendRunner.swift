import Foundation
import Logging
import ServiceLifecycle

/// Carries out sends (docs/audiences.md, "How a send runs"): every due one, a transaction at a
/// time, until none moves; then sleeps until the next scheduled one, or a second (another
/// node's sends), or a send made or moved here wakes it. Several nodes run one each: a send's
/// phones are claimed `SKIP LOCKED`, so they share its work without reaching a phone twice.
struct SendRunner: Service {
    let engine: Engine
    let logger: Logger

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                let now = engine.clock.now()
                var next = now.addingTimeInterval(1)
                do {
                    let steps = try await engine.runDueSends()
                    if steps > 0 { logger.debug("Sends moved", metadata: ["steps": "\(steps)"]) }
                    // One due that could not move (a follow-up waiting for its start) is looked at again in a second.
                    if let scheduled = try await engine.read({ store in try store.nextScheduledSend() }), scheduled > now { next = min(next, scheduled) }
                } catch is CancellationError {
                    return
                } catch {
                    logger.error("The send runner failed; retrying in 1s", metadata: ["error": "\(error)"])
                }
                await engine.sendWake.sleep(until: next, on: engine.clock)
            }
        }
    }
}
