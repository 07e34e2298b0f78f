import Foundation
import IsletCore
import IsletEngine
import IsletTestSupport
import Testing

extension WebhookReceiver {
    /// What it received, in order.
    func received() throws -> [JSONValue] {
        try receivedLines().map { try WireFormat.decoder().decode(JSONValue.self, from: $0) }
    }
}

/// Webhooks delivered by the real sender to a real receiver on loopback (docs/webhooks.md).
struct WebhookDeliveryTests {
    /// Every activity event of a run reaches a receiver that verifies each signature with
    /// Standard Webhooks' own verifier, in order per activity, none lost, though the receiver
    /// refuses the first requests: the endpoint holds, and its retries come on the schedule
    /// (the server's clock moved by hand).
    @Test(.enabled(if: standardWebhooksAvailable, "needs the standardwebhooks package (pip)"), .hangDetector)
    func aVerifyingReceiverGetsEveryActivityEventInOrderThroughFailures() async throws {
        try await WebhookReceiver.with(failures: 3) { receiver in try await deliver(to: receiver) }
    }

    /// An endpoint that wants some of an activity's events still gets the activity as it stood
    /// at each: the ones it does not want are applied on the way (an update it skipped shows
    /// in the end it gets).
    @Test(.enabled(if: standardWebhooksAvailable, "needs the standardwebhooks package (pip)"), .hangDetector)
    func anEndpointThatSkipsEventsGetsTheActivityAsItStoodAtEach() async throws {
        try await WebhookReceiver.with { receiver in
            try await withIslet(webhooks: true) { islet in
                let key = try await islet.createApp("com.example.rides")
                let made = try await islet.request(
                    .POST, "/v1/apps/com.example.rides/webhooks", key: key,
                    body: #"{"url": "\#(receiver.url)", "events": ["activity.started", "activity.ended"]}"#
                )
                try #require(made.json["secret"]?.stringValue).write(to: receiver.secretFile, atomically: true, encoding: .utf8)
                let ride = try await islet.start(key: key, state: ["eta": 10])
                for eta in [8, 5] {
                    let update = try await islet.request(.POST, "/v1/activities/\(ride.id)/update", key: key, body: #"{"content": {"state": {"eta": \#(eta)}}}"#)
                    #expect(update.status == 200)
                }
                let ended = try await islet.request(.POST, "/v1/activities/\(ride.id)/end", key: key, body: #"{"dismissalPolicy": "immediate"}"#)
                #expect(ended.status == 200)
                _ = try await eventually("both events") { receiver.answered() >= 2 ? true : nil }
                let received = try receiver.received()
                #expect(received.map { $0["event"]?["type"] } == ["activity.started", "activity.ended"])
                #expect(received.last?["event"]?["data"]?["activity"]?["content"]?["state"]?["eta"] == 5, "\(String(describing: received.last))")
                #expect(received.allSatisfy { $0["verified"] == true })
            }
        }
    }

    private func deliver(to receiver: WebhookReceiver) async throws {
        try await withIslet(webhooks: true) { islet in
            let key = try await islet.createApp("com.example.rides")
            let made = try await islet.request(
                .POST, "/v1/apps/com.example.rides/webhooks", key: key,
                body: #"{"url": "http://127.0.0.1:\#(receiver.port)/hook", "events": ["activity.*"]}"#
            )
            #expect(made.status == 201, "\(made.json)")
            try #require(made.json["secret"]?.stringValue).write(to: receiver.secretFile, atomically: true, encoding: .utf8)
            let endpoint = try #require(made.json["id"]?.stringValue)

            var ids: [ActivityID] = []
            for ride in 0..<3 {
                let started = try await islet.request(
                    .POST, "/v1/activities", key: key,
                    body: #"{"attributesType": "RideAttributes", "attributes": {"route": "Loop"}, "content": {"state": {"eta": \#(10 + ride)}, "staleDate": \#(t0.timeIntervalSince1970 + 60)}}"#
                )
                #expect(started.status == 201, "\(started.json)")
                ids.append(try #require(started.json["id"]?.stringValue))
            }
            for step in 1...2 {
                for (ride, id) in ids.enumerated() {
                    let update = try await islet.request(
                        .POST, "/v1/activities/\(id)/update", key: key, body: #"{"content": {"state": {"eta": \#(10 + ride - step)}, "staleDate": \#(t0.timeIntervalSince1970 + 60)}}"#
                    )
                    #expect(update.status == 200)
                }
            }
            let ended = try await islet.request(
                .POST, "/v1/activities/\(ids[0])/end", key: key, body: #"{"content": {"state": {"eta": 0}}, "dismissalPolicy": "immediate"}"#
            )
            #expect(ended.status == 200)
            // The others go stale at their stale date.
            islet.clock.advance(by: 120)
            let rides = ids
            try await within {
                for id in rides.dropFirst() {
                    while try await islet.engine.activity(id, owner: nil).state != .stale { try await Task.sleep(for: .milliseconds(20)) }
                }
            }

            // What the log says each activity's webhooks are.
            var expected: [ActivityID: [String]] = [:]
            for id in ids {
                let history = try await islet.engine.history(of: id, owner: nil).map { try $0.decoded() }
                expected[id] = history.filter { WebhookEvent.type(of: $0) != nil }.map { "evt_\($0.id)" }
            }
            #expect(expected[ids[0]]?.count == 6 && expected[ids[1]]?.count == 4, "\(expected)")

            // The retries come as the clock passes their times.
            let total = expected.values.reduce(0) { $0 + $1.count }
            try await within {
                while try Self.delivered(receiver.received()) < total {
                    islet.clock.advance(by: 60)
                    try await Task.sleep(for: .milliseconds(50))
                }
            }
            let received = try receiver.received()
            #expect(received.allSatisfy { $0["verified"] == true }, "\(received.map { $0["verified"] })")
            // Each as the OpenAPI document's `webhooks` says.
            let document = try OpenAPITests.embedded()
            for request in received {
                let type = try #require(request["event"]?["type"]?.stringValue)
                let schema = try #require(document.root["webhooks"]?[type]?["post"]?["requestBody"]?["content"]?["application/json"]?["schema"])
                #expect(document.validator.problems(try #require(request["event"]), schema) == [], "\(type)")
            }
            #expect(received.prefix(3).allSatisfy { $0["status"] == 500 })
            for id in ids {
                // Each event's first 200, in the order they came: the log's order.
                var taken: [String] = []
                for request in received where request["status"] == 200 && request["event"]?["data"]?["activity"]?["id"]?.stringValue == id {
                    if let event = request["id"]?.stringValue, !taken.contains(event) { taken.append(event) }
                }
                #expect(taken == expected[id], "\(id)")
            }
            // The activity as it stood at each event, and who ended it.
            let first = received.filter { $0["status"] == 200 && $0["event"]?["data"]?["activity"]?["id"]?.stringValue == ids[0] }
            #expect(first.compactMap { $0["event"]?["type"]?.stringValue }.uniqued() == [
                "activity.started", "activity.updated", "activity.ended", "activity.dismissed",
            ])
            #expect(first.first { $0["event"]?["type"] == "activity.ended" }?["event"]?["data"]?["by"] == "app")
            #expect(first.first { $0["event"]?["type"] == "activity.dismissed" }?["event"]?["data"]?["activity"]?["activityState"] == "dismissed")
            let stale = received.first { $0["event"]?["type"] == "activity.stale" }
            #expect(stale?["event"]?["data"]?["activity"]?["activityState"] == "stale")
            #expect(stale?["event"]?["version"] == 1 && stale?["event"]?["bundleId"] == "com.example.rides")

            // The endpoint's state and its attempt log say the same, once the last round is written.
            let requests = received.count
            let logged = try await within {
                while true {
                    let attempts = try await islet.request(.GET, "/v1/apps/com.example.rides/webhooks/\(endpoint)/attempts?limit=1000", key: key)
                    let logged = attempts.json["attempts"]?.arrayValue ?? []
                    if logged.count >= requests { return logged }
                    try await Task.sleep(for: .milliseconds(20))
                }
            }
            #expect(logged.count == requests)
            let state = try await islet.request(.GET, "/v1/apps/com.example.rides/webhooks/\(endpoint)", key: key)
            #expect(state.json["failing"] == nil && state.json["enabled"] == true, "\(state.json)")
            #expect(logged.filter { $0["status"] == 500 }.allSatisfy { $0["response"] == "failing on purpose" })
            // And the metrics (docs/operations.md).
            let metrics = try await islet.request(.GET, "/metrics").text
            #expect(metrics.contains(#"islet_webhook_requests_total{status="500"} 3"#), "\(metrics)")
            #expect(metrics.contains(#"islet_webhook_requests_total{status="200"} \#(requests - 3)"#))
            // As the dispatcher read the endpoint last: sending, or failing before its last retry.
            let endpoints = ["sending", "failing"].map { state in
                metrics.split(separator: "\n").first { $0.hasPrefix(#"islet_webhook_endpoints{state="\#(state)"}"#) }.flatMap { Double($0.split(separator: " ").last!) } ?? 0
            }
            #expect(endpoints.reduce(0, +) == 1, "\(endpoints)")
            #expect(metrics.contains(#"islet_webhook_endpoints{state="disabled"} 0.0"#))
        }
    }
}

extension WebhookDeliveryTests {
    /// How many events a receiver answered 200.
    fileprivate static func delivered(_ received: [JSONValue]) -> Int {
        var ids = Set<String>()
        for request in received where request["status"] == 200 {
            if let id = request["id"]?.stringValue { ids.insert(id) }
        }
        return ids.count
    }
}

extension Array where Element: Hashable {
    /// The elements without repeats, in their first order.
    func uniqued() -> [Element] {
        var seen = Set<Element>()
        return filter { seen.insert($0).inserted }
    }
}
