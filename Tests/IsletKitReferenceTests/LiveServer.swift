import Foundation
import IsletServer
import Logging
import ServiceLifecycle

/// A real Islet server in this process, on a free port, with the system clock and its own data
/// directory, for code that talks to it as an app would.
func withLiveServer(_ body: (_ url: String, _ adminKey: String) async throws -> Void) async throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("islet-kit-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }
    var configuration = IsletConfiguration()
    configuration.store.dataDirectory = directory.path
    configuration.server.port = 0
    configuration.apns.enabled = false
    var logger = Logger(label: "islet-kit-test")
    logger.logLevel = .warning
    let (ports, listening) = AsyncStream<Int>.makeStream()
    let islet = try await Islet(configuration: configuration, logger: logger) { endpoint, port in
        if endpoint == .http { listening.yield(port) }
    }
    let services = ServiceGroup(configuration: .init(services: [islet.application], logger: logger))
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await services.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { return }
        do {
            try await body("http://127.0.0.1:\(port)", islet.adminKey)
        } catch {
            await services.triggerGracefulShutdown()
            throw error
        }
        await services.triggerGracefulShutdown()
        try await group.waitForAll()
    }
}
