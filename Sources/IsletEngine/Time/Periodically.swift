import Foundation
import ServiceLifecycle

/// Runs `body` on a fixed beat until the task is cancelled or a graceful shutdown begins: the
/// one loop behind history retention, token rotation and the bus's keep-alives.
///
/// The beat does not drift with late wake-ups or slow runs (the next is `interval` after the
/// last beat, or now if that has passed), and a failed run is retried after the delay
/// `failed` returns, or at the next beat when it returns `nil`.
///
/// - Parameters:
///   - interval: Seconds between beats.
///   - clock: The clock to sleep on (an injected one in tests).
///   - immediately: Whether the first run is at once rather than one interval from now.
///   - failed: Told a run's error; returns how many seconds until the retry, or `nil`.
///   - body: One run.
func periodically(
    every interval: TimeInterval, clock: any WallClock, immediately: Bool = false,
    failed: @escaping @Sendable (any Error) -> TimeInterval? = { _ in nil },
    _ body: @escaping @Sendable () async throws -> Void
) async {
    await cancelWhenGracefulShutdown {
        var beat = immediately ? clock.now() : clock.now().addingTimeInterval(interval)
        while !Task.isCancelled {
            do {
                try await clock.sleep(until: beat)
            } catch {
                return
            }
            do {
                try await body()
                beat = max(beat.addingTimeInterval(interval), clock.now())
            } catch is CancellationError {
                return
            } catch {
                beat = failed(error).map { clock.now().addingTimeInterval($0) } ?? max(beat.addingTimeInterval(interval), clock.now())
            }
        }
    }
}
