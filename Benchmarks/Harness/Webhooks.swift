import ArgumentParser
import AsyncHTTPClient
import Foundation
import Hummingbird
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// `islet-bench webhooks` (issue 43): what webhook endpoints cost an update. The same closed
/// loop as `ingest`, on an Islet with 0, 1 and 5 endpoints of the app, each pointing at a
/// receiver in this process that answers 200 at once; beside each, the webhook requests the
/// receiver took per second, and how long after the loop the last one came. Then what one
/// request costs apart: the server's CPU per request while the backlogs drain (no update
/// comes then), the receiver's, and a bare async-http-client request's (the floor of a
/// sender making one request per event); and the rate at which the webhooks keep up.
struct WebhooksBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webhooks", abstract: "Updates per second and server CPU per update with 0, 1 and 5 webhook endpoints."
    )

    @OptionGroup var systems: Systems

    @Option(help: "Endpoint counts to compare (comma-separated).")
    var endpoints = "0,1,5"

    @Option(help: "Connections, one update in flight each.")
    var connections = 32

    @Option(help: "Activities updated round-robin.")
    var activities = 100

    @Option(help: "Seconds measured (after a warm-up of a fifth of it).")
    var seconds = 10.0

    @Option(help: "Rounds: each endpoint count measured this many times, interleaved.")
    var rounds = 2

    func run() async throws {
        let counts = try endpoints.split(separator: ",").map { text in
            guard let count = Int(text), (0...20).contains(count) else { throw ValidationError("--endpoints: counts from 0 to 20.") }
            return count
        }
        let receiver = try await WebhookReceiver.start()
        defer { receiver.stop() }
        var results: [Int: [(result: Ingest.Result, perRequest: Double?)]] = [:]
        for _ in 0..<rounds {
            for count in counts {
                let (line, result, perRequest) = try await measure(count, receiver: receiver)
                print(line)
                results[count, default: []].append((result, perRequest))
            }
        }
        let floor = try await bareClientCost(receiver: receiver)
        print(
            "webhooks: a request's floor: the receiver's CPU \(grouped(floor.receiver * 1e6)) µs, a bare async-http-client request's"
                + " \(grouped(floor.client * 1e6)) µs (\(grouped(floor.requests)) requests, 16 at once)"
        )
        guard let base = results[0].map({ $0.map(\.result.rate).reduce(0, +) / Double($0.count) }), base > 0 else { return }
        let baseCPU = results[0]!.map(\.result.serverCPUPerUpdate).reduce(0, +) / Double(results[0]!.count)
        for count in counts where count > 0 {
            let runs = results[count] ?? []
            let rate = runs.map(\.result.rate).reduce(0, +) / Double(runs.count)
            let cpu = runs.map(\.result.serverCPUPerUpdate).reduce(0, +) / Double(runs.count)
            var line = "webhooks: \(count) endpoint\(count == 1 ? "" : "s"): throughput \(String(format: "%.2f", rate / base))× of none"
                + " (cost \(String(format: "%.0f", (1 - rate / base) * 100))%), server CPU per update \(String(format: "%.2f", cpu / baseCPU))×"
            // Sustained, the server spends an update's CPU and `count` requests' on each: the
            // rate at which every event is sent as it comes, beside what the floor would allow.
            let perRequest = runs.compactMap(\.perRequest)
            if !perRequest.isEmpty {
                let request = perRequest.reduce(0, +) / Double(perRequest.count)
                let keepUp = baseCPU / (baseCPU + Double(count) * request)
                let ideal = baseCPU / (baseCPU + Double(count) * floor.client)
                line += "; keeping up: \(String(format: "%.2f", keepUp))× of none (a request \(grouped(request * 1e6)) µs),"
                    + " with a bare client's request \(String(format: "%.2f", ideal))×"
            }
            print(line)
        }
    }

    /// What a request costs this process apart from Islet: the receiver's CPU per request
    /// (this process while an Islet's backlog drains is the receiver alone, see `measure`), and
    /// a bare async-http-client request's (HTTP/1.1, 16 at once, a webhook-sized body to the
    /// same receiver, this process's CPU less the receiver's).
    func bareClientCost(receiver: WebhookReceiver) async throws -> (receiver: Double, client: Double, requests: Double) {
        let client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: .init(redirectConfiguration: .disallow))
        defer { _ = client.shutdown() }
        let body = ByteBuffer(string: String(repeating: "x", count: 900))
        let own = getpid()
        func burst(_ seconds: Double) async throws -> Int {
            let until = ContinuousClock.now.advanced(by: .seconds(seconds))
            return try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<16 {
                    group.addTask {
                        var sent = 0
                        while ContinuousClock.now < until {
                            var request = HTTPClientRequest(url: "http://127.0.0.1:\(receiver.port)/hook/floor")
                            request.method = .POST
                            request.headers.add(name: "webhook-id", value: "evt_\(sent)")
                            request.body = .bytes(body)
                            let response = try await client.execute(request, timeout: TimeAmount.seconds(5))
                            for try await _ in response.body {}
                            sent += 1
                        }
                        return sent
                    }
                }
                return try await group.reduce(0, +)
            }
        }
        _ = try await burst(seconds / 5)
        let before = ProcessCPU.seconds(of: own)
        let sent = try await burst(seconds)
        let perRequest = (ProcessCPU.seconds(of: own) - before) / Double(sent)
        let receiverCost = receiver.costs.withLock { samples in samples.isEmpty ? 0 : samples.reduce(0, +) / Double(samples.count) }
        return (receiverCost, max(0, perRequest - receiverCost), Double(sent))
    }

    /// One Islet with `count` endpoints: the loop's line, its result, and the server's CPU per
    /// webhook request while the backlogs drained.
    func measure(_ count: Int, receiver: WebhookReceiver) async throws -> (String, Ingest.Result, Double?) {
        let target = try await IsletTarget.start(systems, durability: "normal", fleet: Fleet(activities: activities, devices: max(1, activities / 100)), transport: .sse)
        defer { target.stop() }
        let setup = try await HTTPConnection.connect(port: target.server.port)
        for index in 0..<count {
            let (status, body) = try await setup.send(
                .POST, "/v1/apps/com.bench/webhooks", headers: [("Authorization", "Bearer \(target.key)")],
                body: ByteBuffer(string: #"{"url": "http://127.0.0.1:\#(receiver.port)/hook/\#(index)", "events": ["activity.updated"]}"#)
            )
            guard status == 201 else { throw HarnessError("making a webhook endpoint: \(status) \(String(buffer: body))") }
        }
        await setup.close()
        let before = receiver.received
        let started = ContinuousClock.now
        let result = try await Ingest.closedLoop(target, size: .tiny, connections: connections, activities: activities, seconds: seconds)
        let loopEnded = ContinuousClock.now
        let duringLoop = receiver.received - before
        // Every acknowledged update, warm-up included, makes one request per endpoint; the
        // last comes once the endpoints' backlogs drain.
        let expected = count * result.acknowledgedWithWarmUp
        var drained = 0.0
        // After the loop no update comes: the server's CPU while the endpoints' backlogs drain
        // is the webhooks' alone (page reads, signing, the client, the rounds' writes).
        let cpuAtLoopEnd = ProcessCPU.seconds(of: target.server.pid)
        // This process meanwhile is the receiver alone (and a look every 10 ms).
        let ownAtLoopEnd = ProcessCPU.seconds(of: getpid())
        var perRequest: Double?
        if count > 0 {
            let deadline = loopEnded.advanced(by: .seconds(120))
            while receiver.received - before < expected, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
            drained = (ContinuousClock.now - loopEnded) / .seconds(1)
            let sentAfter = receiver.received - before - duringLoop
            if sentAfter > 1_000 {
                perRequest = (ProcessCPU.seconds(of: target.server.pid) - cpuAtLoopEnd) / Double(sentAfter)
                let receiverCost = (ProcessCPU.seconds(of: getpid()) - ownAtLoopEnd) / Double(sentAfter)
                receiver.costs.withLock { $0.append(receiverCost) }
            }
        }
        let got = receiver.received - before
        let loopSeconds = (loopEnded - started) / .seconds(1)
        var line = "webhooks \(target.label), \(count) endpoint\(count == 1 ? "" : "s"): \(grouped(result.rate)) updates/s"
            + " (\(result.cpu.text); server CPU per update \(grouped(result.serverCPUPerUpdate * 1e6)) µs)"
        if count > 0 {
            line += "; receiver took \(grouped(Double(duringLoop) / loopSeconds)) requests/s during the loop,"
                + " \(grouped(Double(got))) of \(grouped(Double(expected))) in all, the last \(String(format: "%.1f", drained)) s after it"
                + (perRequest.map { "; server CPU per webhook request while draining \(grouped($0 * 1e6)) µs" } ?? "")
        }
        return (line, result, perRequest)
    }
}

/// A webhook receiver in this process (Hummingbird, HTTP/1.1): counts each request, answers
/// 200 at once.
final class WebhookReceiver: Sendable {
    let port: Int
    /// Its CPU per request, from each drain (`WebhooksBench.measure`).
    let costs = Mutex<[Double]>([])
    private let count: Counter
    private let task: Task<Void, any Error>

    var received: Int { count.value.load(ordering: .relaxed) }

    private init(port: Int, count: Counter, task: Task<Void, any Error>) {
        self.port = port
        self.count = count
        self.task = task
    }

    static func start() async throws -> WebhookReceiver {
        let counter = Counter()
        let router = Router()
        router.post("/hook/:n") { request, _ -> HTTPResponse.Status in
            _ = try await request.body.collect(upTo: 1 << 20)
            counter.value.add(1, ordering: .relaxed)
            return .ok
        }
        let (ports, bound) = AsyncStream<Int>.makeStream()
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in bound.yield(channel.localAddress?.port ?? 0) }
        )
        let task = Task { try await app.runService() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next(), port > 0 else { throw HarnessError("the webhook receiver did not listen") }
        return WebhookReceiver(port: port, count: counter, task: task)
    }

    func stop() { task.cancel() }

    private final class Counter: Sendable {
        let value = Atomic<Int>(0)
    }
}
