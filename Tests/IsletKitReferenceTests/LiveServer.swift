import Foundation
import Synchronization
import IsletClient
import IsletDelivery
import IsletKit
import IsletTestSupport
import IsletServer
import IsletStore
import Logging
import ServiceLifecycle

/// A real Islet server in this process, with the system clock, for code that talks to it as an
/// app would. It can be stopped and started again on the same port and data, as a restart.
final class LiveServer: Sendable {
    let url: String
    let port: Int
    let adminKey: String
    private let services: ServiceGroup
    private let running: Task<Void, any Error>

    private init(port: Int, adminKey: String, services: ServiceGroup, running: Task<Void, any Error>) {
        self.url = "http://127.0.0.1:\(port)"
        self.port = port
        self.adminKey = adminKey
        self.services = services
        self.running = running
    }

    /// Starts a server on `port` (0: a free one) keeping its data in `directory`. A restart on
    /// the same port may find it not yet free: it is tried again for up to 30 s. (It once waited
    /// forever here: a server that could not listen ended, and nothing said so.)
    static func start(directory: URL, port: Int = 0) async throws -> LiveServer {
        let deadline = ContinuousClock.now.advanced(by: .seconds(30))
        while true {
            do {
                return try await attempt(directory: directory, port: port)
            } catch let error as DidNotListen where port != 0 && ContinuousClock.now < deadline {
                _ = error
                try await Task.sleep(for: .milliseconds(250))
            }
        }
    }

    /// The server ended without listening; why is in `cause`.
    struct DidNotListen: Error {
        let cause: String
    }

    private static func attempt(directory: URL, port: Int) async throws -> LiveServer {
        var configuration = IsletConfiguration()
        configuration.store.dataDirectory = directory.path
        configuration.server.port = port
        configuration.apns.enabled = false
        var logger = Logger(label: "islet-kit-test")
        // Notices too: a shutdown that had to close connections a client held says so.
        logger.logLevel = .notice
        let (ports, listening) = AsyncStream<Int>.makeStream()
        let islet = try await Islet(configuration: configuration, logger: logger, openStore: { try SQLiteStore($0) }, openTransport: PushServiceTransport.open) { endpoint, port in
            if endpoint == .http { listening.yield(port) }
        }
        let services = ServiceGroup(configuration: .init(services: [islet.service], logger: logger))
        let running = Task {
            // However it ends, the wait for its port below ends too.
            defer { listening.finish() }
            try await services.run()
        }
        var iterator = ports.makeAsyncIterator()
        guard let bound = await iterator.next() else {
            let ended = await running.result
            throw DidNotListen(cause: "\(ended)")
        }
        return LiveServer(port: bound, adminKey: islet.adminKey, services: services, running: running)
    }

    /// Shuts the server down gracefully and waits until it has: as `islet serve` does, for at
    /// most `server.shutdownTimeout` (10 s) before the connections still open are closed. (This
    /// wait once held a full run: the test servers ran the application alone, without the bound.)
    func stop() async {
        await services.triggerGracefulShutdown()
        _ = try? await running.value
    }
}

/// Runs `body` against a fresh server, then stops it and deletes its data.
func withLiveServer(_ body: (_ url: String, _ adminKey: String) async throws -> Void) async throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("islet-kit-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }
    // A test of this suite once waited idle until its 10-minute limit in full runs, and the
    // process did not end after it: where it waits is written to the standard error after 5
    // minutes, whatever the trace setting.
    Trail.mark("starting the server")
    let watchdog = Task {
        try await Task.sleep(for: .seconds(300))
        FileHandle.standardError.write(Data("IsletKit reference test still waiting after 300 s at: \(Trail.last)\n".utf8))
    }
    defer { watchdog.cancel() }
    let server = try await LiveServer.start(directory: directory)
    Trail.mark("running the test's body")
    do {
        try await body(server.url, server.adminKey)
    } catch {
        Trail.mark("stopping the server after \(error)")
        await server.stop()
        throw error
    }
    Trail.mark("stopping the server")
    await server.stop()
    Trail.mark("stopped")
}

/// Where a test of this suite is (the suite runs one test at a time).
enum Trail {
    private static let step = Mutex("")

    static func mark(_ text: String) {
        step.withLock { $0 = "\(Date()) \(text)" }
    }

    static var last: String { step.withLock { $0 } }
}

/// Creates the app these tests act for and points IsletKit at the server with its key, as an
/// app would configure it; returns the key.
func connectIsletKit(to url: String, adminKey: String) async throws -> String {
    let app = try await IsletClient(server: url, key: adminKey).createApp(bundleId: "com.appcircle.build")
    IsletConnection.configure(server: url, key: app.apiKey)
    return app.apiKey
}

/// `Activity.request` for a build, off the cooperative pool: it blocks until the server answers,
/// as ActivityKit's blocks on the system.
func requestBuild(
    _ attributes: StatusAttribute, _ content: ActivityContent<StatusAttribute.ContentState>, pushType: PushType? = nil
) async throws -> Activity<StatusAttribute> {
    try await offThePool {
        Result { try Activity<StatusAttribute>.request(attributes: attributes, content: content, pushType: pushType) }
    }.get()
}
