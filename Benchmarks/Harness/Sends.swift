import ArgumentParser
import Foundation
import NIOCore
import NIOHTTP1

/// `islet-bench sends`: one send to every user who follows a match (issue 44). Islet A holds
/// `--users` users with two phones each, every phone with a push-to-start token, and delivers
/// to a sink that answers 200 at once. It measures:
///
/// - the API's answer time for a send naming 20,000 users (scheduled far ahead, then cancelled):
///   the work is queued, not done inline (target < 100 ms);
/// - one start by tag, now: phones started per second by the send, against the deliveries per
///   second A makes of them. The send never waits on itself when it has started every phone
///   while the outbox still holds a backlog: then its rate is above the node's delivery rate.
struct SendsBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sends",
        abstract: "One send for 10,000 users' 20,000 phones: the API's answer time, phones started/s against A's deliveries/s."
    )

    @OptionGroup var systems: Systems

    @OptionGroup var store: StoreChoice

    @Option(help: "Users, each with two phones.")
    var users = 10_000

    @Option(help: "Sends naming 20,000 users timed, one after another.")
    var answers = 10

    private static let bundleId = "com.bench.sends"

    func run() async throws {
        guard (1...10_000).contains(users) else { throw ValidationError("--users is 1 to 10,000 (a send names at most 20,000).") }
        let phones = 2 * users
        let loop = try await DeliveryBackend.start(
            systems: systems, store: store, phones: 0, devices: phones, sink: true, bundleId: Self.bundleId,
            environment: ["ISLET_LIFECYCLE_MAX_ACTIVITIES_PER_APP": "1000000"]
        )
        let (sink, backend, auth) = (loop.apple, loop.backend, loop.auth)
        defer { sink.stop() }
        defer { backend.stop() }
        let base = "/v1/apps/\(Self.bundleId)"
        _ = try await IsletSetup.inLanes(users, port: backend.port) { connection, user in
            let body = #"{"devices":["d\#(2 * user)","d\#(2 * user + 1)"],"tags":{"match":"123"}}"#
            let (status, answer) = try await connection.send(.PUT, "\(base)/users/u-\(user)", headers: auth, body: ByteBuffer(string: body))
            guard status == 200 || status == 201 else { throw HarnessError("making a user: \(status) \(String(buffer: answer))") }
        }
        print(
            "sends: A (\(backend.name), durability \(store.durability)) with \(grouped(Double(users))) users tagged match=123, two phones each"
                + " (\(grouped(Double(phones))) phones with push-to-start tokens), delivering to \(sink.name)"
        )

        // The answer time of a send naming 20,000 users: the app's own and made-up ones, an hour
        // ahead so that it does not run; each cancelled after.
        let connection = try await HTTPConnection.connect(port: backend.port)
        let named = (0..<20_000).map { $0 < users ? "\"u-\($0)\"" : "\"absent-\($0)\"" }.joined(separator: ",")
        let at = Int(Date().timeIntervalSince1970) + 3_600
        let bigSend = #"{"action":"end","key":"match-123","audience":{"users":[\#(named)]},"at":\#(at)}"#
        var times: [UInt64] = []
        let clock = ContinuousClock()
        for _ in 0..<answers {
            let started = clock.now
            let (status, answer) = try await connection.send(.POST, "\(base)/sends", headers: auth, body: ByteBuffer(string: bigSend))
            times.append(UInt64((clock.now - started) / .nanoseconds(1)))
            guard status == 202, let id = Self.field("id", in: answer) else { throw HarnessError("a send: \(status) \(String(buffer: answer))") }
            _ = try await connection.send(.DELETE, "\(base)/sends/\(id)", headers: auth)
        }
        times.sort()
        print(
            "sends: a send naming 20,000 users (\(grouped(Double(bigSend.utf8.count / 1024))) KiB) answered 202 in \(percentiles([0.5], of: times)),"
                + " max \(String(format: "%.2f", percentile(1, of: times))) ms (\(answers) sends, one after another; target < 100 ms)"
        )

        // One start by tag, now: the send's progress and A's deliveries, every 50 ms.
        let before = try await DeliveryLatency.senderCounters(port: backend.port, auth: auth).requests
        let meter = CPUMeter(backend)
        let posted = clock.now
        let start = #"{"action":"start","key":"match-123","audience":{"tags":{"match":"123"}},"attributesType":"Bench","content":{"state":{"score":"0-0"}}}"#
        let (status, answer) = try await connection.send(.POST, "\(base)/sends", headers: auth, body: ByteBuffer(string: start))
        guard status == 202, let id = Self.field("id", in: answer) else { throw HarnessError("the start: \(status) \(String(buffer: answer))") }
        var sendDone: Duration?
        var backlogAtDone = 0.0
        var delivered: Duration?
        let deadline = posted.advanced(by: .seconds(600))
        while delivered == nil, clock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
            let requests = try await DeliveryLatency.senderCounters(port: backend.port, auth: auth).requests - before
            if sendDone == nil {
                let (_, body) = try await connection.send(.GET, "\(base)/sends/\(id)", headers: auth)
                if Self.field("status", in: body) == "done" {
                    sendDone = clock.now - posted
                    backlogAtDone = Double(phones) - requests
                }
            }
            if requests >= Double(phones) { delivered = clock.now - posted }
        }
        let use = meter.use()
        guard let sendDone, let delivered else { throw HarnessError("the start did not reach every phone within 600 s") }
        let seconds = { (duration: Duration) in duration / .seconds(1) }
        let startedRate = Double(phones) / seconds(sendDone)
        let deliveredRate = Double(phones) / seconds(delivered)
        print(
            "sends: one start by tag to \(grouped(Double(phones))) phones: every phone started in \(String(format: "%.2f", seconds(sendDone))) s"
                + " = \(grouped(startedRate)) phones started/s; every push-to-start answered in \(String(format: "%.2f", seconds(delivered))) s"
                + " = \(grouped(deliveredRate)) deliveries/s; \(grouped(max(0, backlogAtDone))) still to deliver when the send was done"
                + " (started/s ÷ deliveries/s = \(String(format: "%.2f", startedRate / deliveredRate))×; target ≥ 1: the send never waits on itself);"
                + " A \(use.text.replacingOccurrences(of: "server ", with: ""))"
        )

        // The node's delivery rate alone: delivery paused, a second start by tag (another
        // match's card: push-to-starts, which need no token from the phone) is made and held in
        // the outbox, then delivery resumes and the backlog drains with no send beside it.
        try await pauseDelivery(true, connection: connection, base: base, auth: auth)
        let update = #"{"action":"start","key":"match-124","audience":{"tags":{"match":"123"}},"attributesType":"Bench","content":{"state":{"score":"0-0"}}}"#
        let updatePosted = clock.now
        let (updateStatus, updateAnswer) = try await connection.send(.POST, "\(base)/sends", headers: auth, body: ByteBuffer(string: update))
        guard updateStatus == 202, let updateId = Self.field("id", in: updateAnswer) else {
            throw HarnessError("the second start: \(updateStatus) \(String(buffer: updateAnswer))")
        }
        var updated: Duration?
        while updated == nil, clock.now < updatePosted.advanced(by: .seconds(600)) {
            try await Task.sleep(for: .milliseconds(50))
            let (_, body) = try await connection.send(.GET, "\(base)/sends/\(updateId)", headers: auth)
            if Self.field("status", in: body) == "done" { updated = clock.now - updatePosted }
        }
        guard let updated else { throw HarnessError("the second start was not done within 600 s") }
        let held = try await DeliveryLatency.senderCounters(port: backend.port, auth: auth).requests
        let drainMeter = CPUMeter(backend)
        let resumed = clock.now
        try await pauseDelivery(false, connection: connection, base: base, auth: auth)
        var drained: Duration?
        while drained == nil, clock.now < resumed.advanced(by: .seconds(600)) {
            try await Task.sleep(for: .milliseconds(50))
            let requests = try await DeliveryLatency.senderCounters(port: backend.port, auth: auth).requests - held
            if requests >= Double(phones) { drained = clock.now - resumed }
        }
        let drainUse = drainMeter.use()
        await connection.close()
        guard let drained else { throw HarnessError("the held starts were not delivered within 600 s") }
        let aloneRate = Double(phones) / seconds(drained)
        print(
            "sends: A's deliveries alone (delivery paused, a second start by tag made in \(String(format: "%.2f", seconds(updated))) s"
                + " = \(grouped(Double(phones) / seconds(updated))) phones started/s, then resumed): \(grouped(aloneRate)) deliveries/s,"
                + " A \(drainUse.text.replacingOccurrences(of: "server ", with: ""));"
                + " the start's phones started/s ÷ A's deliveries/s alone = \(String(format: "%.2f", startedRate / aloneRate))× (target ≥ 1)"
        )
    }

    /// Pauses or resumes A's delivery to real phones (`PATCH /v1/apps/{b}` `deliveryPaused`).
    private func pauseDelivery(_ paused: Bool, connection: HTTPConnection, base: String, auth: [(String, String)]) async throws {
        let (status, answer) = try await connection.send(.PATCH, base, headers: auth, body: ByteBuffer(string: #"{"deliveryPaused":\#(paused)}"#))
        guard status == 200 else { throw HarnessError("deliveryPaused \(paused): \(status) \(String(buffer: answer))") }
    }

    /// A top-level string field of a JSON answer.
    private static func field(_ name: String, in body: ByteBuffer) -> String? {
        (try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any])?[name] as? String
    }
}
