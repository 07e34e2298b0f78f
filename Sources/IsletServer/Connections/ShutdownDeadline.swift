import Logging
import ServiceLifecycle

/// Bounds a service's graceful shutdown: once shutdown begins, the service has `timeout` to
/// finish; then every connection still open on the ports is closed, and the service finishes as
/// its connections go.
///
/// Hummingbird's graceful shutdown waits for each connection's answer in flight, and an answer
/// a client never reads is in flight for ever: without this, one such client keeps `islet serve`
/// running after SIGTERM until something kills it. ServiceLifecycle's own bound
/// (`maximumGracefulShutdownDuration`) cancels the tasks instead: the group then ends with the
/// cancellation as its error (a failed exit), nothing says how many connections were cut, and
/// Hummingbird answers a cancelled connection by closing only its input. Closing the connections
/// ends their writes, and the process exits as after any shutdown.
struct ShutdownDeadline: Service {
    let service: any Service
    let timeout: Duration
    /// The ports' connections, closed when the deadline passes.
    let connections: [ConnectionCap]
    let logger: Logger

    func run() async throws {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            // Both inherit the graceful shutdown of the task running this service.
            group.addTask {
                try await service.run()
                return true
            }
            group.addTask {
                do {
                    try await gracefulShutdown()
                    try await Task.sleep(for: timeout)
                } catch {
                    return false  // cancelled: the service finished first
                }
                cutConnections()
                return false
            }
            while let serviceFinished = try await group.next() {
                if serviceFinished { return group.cancelAll() }
            }
        }
    }

    private func cutConnections() {
        let cut = connections.reduce(0) { $0 + $1.closeAll() }
        guard cut > 0 else { return }
        logger.notice(
            "Shutdown: closed \(cut) connection\(cut == 1 ? "" : "s") still open after the shutdown timeout",
            metadata: ["limit": "server.shutdownTimeout"]
        )
    }
}
