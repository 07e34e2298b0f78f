import AsyncHTTPClient
import Foundation
import NIOHTTP1
import ServiceLifecycle
import IsletClient
import IsletCore
import IsletDelivery
import IsletEngine
import IsletServer
import IsletWebhooks
import IsletStore
import Logging
import Synchronization
import NIOCore
import IsletTestSupport
import Testing

let t0 = Date(timeIntervalSince1970: 1_700_000_000)

/// A reply from the server: its status and its JSON body.
struct Reply {
    var status: Int
    var json: JSONValue
    var headers: HTTPHeaders
    var text: String

    /// The error reason, when the reply is an error.
    var reason: String? {
        if case .string(let reason) = json["error"]?["reason"] { return reason }
        return nil
    }
}

/// A live Islet server on a free port, with a hand-moved clock and its own data directory.
struct Harness: Sendable {
    let islet: Islet
    let clock: ManualClock
    let port: Int
    /// The APNs endpoint's port, when it runs.
    let apnsPort: Int?
    let http: HTTPClient
    let directory: URL

    var admin: String { islet.adminKey }
    var engine: Engine { islet.engine }

    /// Sends a request with a raw body and reads the JSON reply.
    func request(
        _ method: HTTPMethod, _ path: String, key: String? = nil, body: String? = nil,
        headers extra: [(String, String)] = []
    ) async throws -> Reply {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        request.method = method
        for (name, value) in extra { request.headers.add(name: name, value: value) }
        if let key { request.headers.add(name: "Authorization", value: "Bearer \(key)") }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
        }
        let tag = Test.current?.name ?? "?"
        debugTrace("\(tag) > \(method) \(path)")
        let response = try await http.execute(request, timeout: .seconds(20))
        let text = String(buffer: try await response.body.collect(upTo: 16 << 20))
        debugTrace("\(tag) < \(response.status.code) \(method) \(path)")
        let json = (try? WireFormat.decoder().decode(JSONValue.self, from: Data(text.utf8))) ?? .string(text)
        return Reply(status: Int(response.status.code), json: json, headers: response.headers, text: text)
    }

    /// Creates an app and returns its API key.
    func createApp(_ bundleId: String) async throws -> String {
        let reply = try await request(.POST, "/v1/apps", key: admin, body: #"{"bundleId":"\#(bundleId)"}"#)
        guard case .string(let key) = reply.json["apiKey"] else {
            Issue.record("Creating \(bundleId) failed: \(reply.json)")
            return ""
        }
        return key
    }

    /// A client of the server's REST API and event stream.
    func isletClient(key: String?) -> IsletClient {
        IsletClient(server: "http://127.0.0.1:\(port)", key: key, http: http)
    }

    /// Starts an activity for the app with `key`, failing the test on refusal.
    func start(key: String, state: JSONValue = ["speed": 1], extra: String = "") async throws -> Activity {
        let reply = try await request(
            .POST, "/v1/activities", key: key,
            body: #"{"attributesType":"RideAttributes","attributes":{"route":"Loop"},"content":{"state":\#(try WireFormat.string(state))}\#(extra)}"#
        )
        #expect(reply.status == 201, "start: \(reply.json)")
        return try WireFormat.decoder().decode(Activity.self, from: WireFormat.encoder().encode(reply.json))
    }
}

/// Runs `body` against a live server built from `configure`d settings, then shuts it down
/// gracefully and deletes its data.
///
/// - Parameters:
///   - serverClock: The server's clock, when not the harness's `ManualClock`.
///   - data: Fills the data directory before the server opens it (a fixture's files).
///   - openStore: Opens the store (SQLite in the data directory unless given).
func withIslet<T: Sendable>(
    _ configure: (inout IsletConfiguration) -> Void = { _ in },
    serverClock: (any WallClock)? = nil,
    data: (URL) throws -> Void = { _ in },
    openStore: @escaping StoreOpener = { try SQLiteStore($0) },
    webhooks: Bool = false,
    _ body: @Sendable (Harness) async throws -> T
) async throws -> T {
    try await ServerSlots.shared.run {
        try await runIslet(configure, serverClock: serverClock, data: data, openStore: openStore, webhooks: webhooks, body)
    }
}

/// `withIslet`, once its slot is free.
private func runIslet<T: Sendable>(
    _ configure: (inout IsletConfiguration) -> Void, serverClock: (any WallClock)?, data: (URL) throws -> Void, openStore: @escaping StoreOpener,
    webhooks: Bool, _ body: @Sendable (Harness) async throws -> T
) async throws -> T {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("islet-server-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    try data(directory)
    var configuration = IsletConfiguration()
    configuration.store.dataDirectory = directory.path
    configuration.server.port = 0
    configuration.apns.port = 0
    // A hang detector, as a test's time limits are (`Duration.testCommits`).
    configuration.store.commitTimeout = hangFloor
    configure(&configuration)
    let tag = Test.current?.name ?? "?"
    var logger = Logger(label: "islet-test")
    logger.logLevel = ProcessInfo.processInfo.environment["ISLET_TEST_TRACE"] != nil ? .debug : .warning
    logger[metadataKey: "test"] = "\(tag)"
    let clock = ManualClock(now: t0)
    let (ports, listening) = AsyncStream<(Endpoint, Int)>.makeStream()
    let islet = try await Islet(
        configuration: configuration, clock: serverClock ?? clock, logger: logger, openStore: openStore,
        openTransport: PushServiceTransport.open,
        webhookTransport: webhooks ? HTTPWebhookTransport(allowPrivateNetworks: configuration.webhooks.allowPrivateNetworks, logger: logger) : nil
    ) { endpoint, port in
        listening.yield((endpoint, port))
    }
    let services = ServiceGroup(configuration: .init(services: [islet.service], logger: logger))
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await services.run() }
        var iterator = ports.makeAsyncIterator()
        var bound: [Endpoint: Int] = [:]
        while bound[.http] == nil || (configuration.apns.enabled && bound[.apns] == nil) {
            guard let (endpoint, port) = await iterator.next() else { throw ServerDidNotStart() }
            bound[endpoint] = port
        }
        let port = bound[.http]!
        debugTrace("\(tag) running on \(port)")
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        let result: Result<T, any Error>
        do {
            result = .success(try await body(Harness(
                islet: islet, clock: clock, port: port, apnsPort: bound[.apns], http: http, directory: directory
            )))
        } catch {
            result = .failure(error)
        }
        debugTrace("\(tag) body done")
        try await http.shutdown()
        debugTrace("\(tag) client shut down")
        await services.triggerGracefulShutdown()
        try await group.waitForAll()
        debugTrace("\(tag) server stopped")
        return try result.get()
    }
}

/// Reads events from a stream until `count` have arrived.
func collect(_ stream: AsyncThrowingStream<Event, any Error>, count: Int) async throws -> [Event] {
    var events: [Event] = []
    for try await event in stream {
        events.append(event)
        if events.count == count { break }
    }
    return events
}

/// Reads a stream a few events at a time: a background task buffers what arrives.
final class EventReader: Sendable {
    private struct State {
        var events: [Event] = []
        var consumed = 0
        var end: Result<Void, any Error>?
        var waiter: CheckedContinuation<Void, Never>?
    }

    private final class Box: Sendable {
        let state = Mutex(State())
    }

    private let box = Box()
    private let task: Task<Void, Never>

    init(_ stream: AsyncThrowingStream<Event, any Error>) {
        let box = self.box
        task = Task {
            var end: Result<Void, any Error> = .success(())
            do {
                for try await event in stream {
                    box.state.withLock { $0.events.append(event) }
                    Self.wake(box)
                }
            } catch {
                end = .failure(error)
            }
            box.state.withLock { $0.end = end }
            Self.wake(box)
        }
    }

    deinit {
        task.cancel()
    }

    /// The next `count` events; throws if the stream ends first.
    func next(_ count: Int) async throws -> [Event] {
        while true {
            let ready = box.state.withLock { state -> Result<[Event], any Error>? in
                if state.events.count - state.consumed >= count {
                    defer { state.consumed += count }
                    return .success(Array(state.events[state.consumed..<state.consumed + count]))
                }
                if case .failure(let error) = state.end { return .failure(error) }
                if state.end != nil { return .failure(StreamEnded()) }
                return nil
            }
            if let ready { return try ready.get() }
            try Task.checkCancellation()
            await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    let resume = box.state.withLock { state -> Bool in
                        if state.events.count - state.consumed >= count || state.end != nil || Task.isCancelled {
                            return true
                        }
                        state.waiter = continuation
                        return false
                    }
                    if resume { continuation.resume() }
                }
            } onCancel: {
                Self.wake(box)
            }
        }
    }

    private static func wake(_ box: Box) {
        box.state.withLock { state -> CheckedContinuation<Void, Never>? in
            defer { state.waiter = nil }
            return state.waiter
        }?.resume()
    }
}

struct StreamEnded: Error {}



func debugTrace(_ text: String) {
    if ProcessInfo.processInfo.environment["ISLET_TEST_TRACE"] != nil {
        FileHandle.standardError.write(Data("TRACE \(text)\n".utf8))
    }
}

struct ServerDidNotStart: Error {}
