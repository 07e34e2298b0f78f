import Foundation
import IsletCore
import IsletServer
import IsletTestSupport
import Testing

/// What the console reads (docs/console.md), and what each reader may see of it.
@Suite("Console routes", .hangDetector)
struct ConsoleRouteTests {
    /// A reader without a key sees no more than a token's first 8 digits, wherever Islet wrote
    /// it: a push-to-start delivery's target and note (which name the phone's token), the
    /// activity's events, and the APNs log's path and Islet's words about a malformed token.
    @Test func aKeylessReaderSeesAtMostEightDigitsOfAToken() async throws {
        try await withIslet { islet in
            try await islet.withProvider { provider in
                let token = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
                let app = provider.bundleId
                _ = try await islet.request(.PUT, "/v1/apps/\(app)/delivery", key: islet.admin, body: Self.credential)
                _ = try await islet.request(
                    .PUT, "/v1/devices/default/push-to-start-tokens/BuildAttributes", key: provider.apiKey,
                    body: #"{"token":"\#(token)","environment":"development"}"#
                )
                let started = try await islet.request(
                    .POST, "/v1/activities", key: provider.apiKey,
                    body: #"{"attributesType":"BuildAttributes","attributes":{},"content":{"state":{"step":"build"}}}"#
                )
                let id = try #require(started.json["id"]?.stringValue, "\(started.text)")
                // One more digit than a token has: refused, and Islet's words repeat what was sent.
                let malformed = try await provider.push(token + "0", Provider.update(#"{"step":"test"}"#))
                #expect(malformed.reason == "BadDeviceToken")

                let asLogged = token.prefix(8) + "…" + token.suffix(8)
                let keyed = try await islet.request(.GET, "/v1/activities/\(id)/deliveries", key: provider.apiKey)
                #expect(keyed.text.contains("push-to-start to \(asLogged)"), "a key holder sees what it saw: \(keyed.text)")
                for path in ["/v1/activities/\(id)/deliveries", "/v1/activities/\(id)/events", "/v1/apns/requests"] {
                    let keyless = try await islet.request(.GET, path)
                    #expect(keyless.status == 200, "\(path): \(keyless.text)")
                    #expect(keyless.text.contains(token.prefix(8) + "…"), "\(path): \(keyless.text)")
                    #expect(!keyless.text.contains(token.prefix(9)) && !keyless.text.contains(token.suffix(8)), "\(path): \(keyless.text)")
                }
            }
        }
    }

    /// A push Islet answered 200 but the device dropped says why in the APNs log, and which
    /// activity it reached; so does one the device applied.
    @Test func aPushTheDeviceDroppedShowsItsReasonAndItsActivityInTheLog() async throws {
        try await withIslet { islet in
            try await islet.withProvider { provider in
                let activity = try await provider.startWithToken()
                let token = try #require(activity.pushToken)
                #expect(try await provider.push(token, Provider.update(#"{"step":5}"#, timestamp: t0Seconds + 100)).status == 200)
                #expect(try await provider.push(token, Provider.update(#"{"step":4}"#, timestamp: t0Seconds + 50)).status == 200)
                let log = try await islet.request(.GET, "/v1/apns/requests", key: provider.apiKey)
                #expect(try Self.undocumented(log, "/v1/apns/requests") == [])
                let entries = log.json["requests"].items
                try #require(entries.count == 2, "\(log.text)")
                let (dropped, applied) = (entries[0], entries[1])
                #expect(dropped["status"] == 200 && applied["status"] == 200)
                let drop = try #require(dropped["outcomes"].items.first, "\(dropped)")
                #expect(drop["activityId"] == .string(activity.id) && drop["device"] == "default", "\(drop)")
                #expect(drop["dropped"] == "olderTimestamp" && drop["message"]?.stringValue?.contains("older") == true, "\(drop)")
                #expect(applied["outcomes"] == [["activityId": .string(activity.id), "device": "default"]], "\(applied)")
            }
        }
    }

    /// A broadcast's entry says what it did on each activity it reached: applied, or dropped
    /// with the reason; a reader without a key sees the channel's id cut short.
    @Test func aBroadcastSaysWhatItDidOnEachActivityItReached() async throws {
        try await withIslet { islet in
            try await islet.withProvider { provider in
                let client = islet.isletClient(key: provider.apiKey)
                let channel = try await client.createChannel(bundleId: provider.bundleId, storagePolicy: 0)
                var ids: [ActivityID] = []
                for _ in 0..<2 {
                    ids.append(try await client.start(ActivityRequest(
                        attributesType: "Score", content: ActivityContent(state: ["home": 0]), pushType: .channel(channel.id)
                    )).id)
                }
                _ = try await client.update(ids[0], ContentUpdate(content: ActivityContent(state: ["home": 1]), timestamp: t0.addingTimeInterval(100)))
                let response = try await provider.apns.broadcast(
                    bundleId: provider.bundleId, channelId: channel.id,
                    payload: Data(#"{"aps":{"event":"update","content-state":{"home":2},"timestamp":\#(t0Seconds + 50)}}"#.utf8),
                    providerToken: try await provider.jwt()
                )
                #expect(response.status == 200)
                let log = try await islet.request(.GET, "/v1/apns/requests", key: provider.apiKey)
                #expect(try Self.undocumented(log, "/v1/apns/requests") == [])
                let entry = try #require(log.json["requests"].items.first)
                #expect(entry["reached"] == 2, "\(entry)")
                let outcomes = entry["outcomes"].items
                #expect(outcomes.first { $0["activityId"] == .string(ids[0]) }?["dropped"] == "olderTimestamp", "\(outcomes)")
                #expect(outcomes.first { $0["activityId"] == .string(ids[1]) }?["dropped"] == nil, "\(outcomes)")
                let keyless = try #require(try await islet.request(.GET, "/v1/apns/requests").json["requests"].items.first)
                #expect(keyless["headers"]?["apns-channel-id"] == .string(String(channel.id.prefix(8)) + "…"), "\(keyless)")
            }
        }
    }

    /// An entry of the APNs log is an app's, and its key sees it, only when the request's
    /// provider token verified for that app. Requests without one — anyone who reaches the port
    /// can send them, naming any topic — are the operator's alone, and however many come, they
    /// push none of an app's entries out of the log.
    @Test func requestsWithoutAProviderTokenForTheAppAreNotItsAndPushNoneOfItsEntriesOut() async throws {
        try await withIslet { islet in
            try await islet.withProvider { provider in
                let activity = try await provider.startWithToken()
                let token = try #require(activity.pushToken)
                #expect(try await provider.push(token, Provider.update(#"{"step":2}"#)).status == 200)
                // Another app's verified key, naming this app's topic.
                try await islet.withProvider("com.example.other", keyId: "OTHER12345") { other in
                    let answer = try await other.push(token, Provider.update(#"{"step":3}"#), topic: provider.bundleId)
                    #expect(answer.reason == "TopicDisallowed", "\(answer)")
                }
                let named = try await islet.request(.GET, "/v1/apns/requests", key: islet.admin).json["requests"].items
                #expect(named.first?["status"] == 400 && named.first?["bundleId"] == nil, "the other key's request is no app's: \(named)")
                // More requests without a provider token than the log keeps, naming the app.
                let unsigned = Data(Provider.update(#"{"step":4}"#).utf8)
                let headers = [("apns-topic", provider.bundleId + ".push-type.liveactivity"), ("apns-push-type", "liveactivity")]
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for lane in 0..<20 {
                        group.addTask {
                            for _ in 0..<55 {
                                let answer = try await provider.apns.send(.POST, "/3/device/\(token)", headers: headers, body: unsigned, providerToken: nil)
                                #expect(answer.status == 403, "lane \(lane): \(answer)")
                            }
                        }
                    }
                    try await group.waitForAll()
                }
                let own = try await islet.request(.GET, "/v1/apns/requests?limit=1000", key: provider.apiKey)
                let entries = own.json["requests"].items
                #expect(entries.count == 1 && entries.first?["status"] == 200, "the app's key sees its verified push only, still there: \(entries.count)")
                #expect(entries.first?["bundleId"] == .string(provider.bundleId))
                let all = try await islet.request(.GET, "/v1/apns/requests?limit=1000", key: islet.admin).json["requests"].items
                #expect(all.contains { $0["status"] == 200 && $0["bundleId"] == .string(provider.bundleId) })
                #expect(all.contains { $0["status"] == 403 && $0["bundleId"] == nil }, "the operator sees the unsigned ones")
            }
        }
    }

    /// The overview's counts are the server's, since the node started: what any reader gets,
    /// at any time, is the same totals, however often a page is reloaded — limited to its own
    /// app for an app's key.
    @Test func theOverviewCountsUpdatesAndDropsSinceTheNodeStarted() async throws {
        try await withIslet { islet in
            let bike = try await islet.createApp("com.example.bike")
            let ci = try await islet.createApp("com.example.ci")
            let ride = try await islet.start(key: bike)
            for (speed, timestamp) in [(2, 10), (3, 20), (1, 5)] {
                _ = try await islet.request(
                    .POST, "/v1/activities/\(ride.id)/update", key: bike,
                    body: #"{"content":{"state":{"speed":\#(speed)}},"timestamp":\#(t0Seconds + timestamp)}"#
                )
            }
            let build = try await islet.start(key: ci)
            _ = try await islet.request(.POST, "/v1/activities/\(build.id)/update", key: ci, body: #"{"content":{"state":{"speed":9}}}"#)
            for reader in [islet.admin, nil] {
                let overview = try await islet.request(.GET, "/v1/overview", key: reader)
                #expect(try Self.undocumented(overview, "/v1/overview") == [])
                #expect(overview.json["counts"]?["updates"] == 3, "\(overview.text)")
                #expect(overview.json["counts"]?["dropped"] == ["olderTimestamp": 1], "\(overview.text)")
                #expect(overview.json["counts"]?["since"] == .integer(Int64(t0Seconds)), "\(overview.text)")
            }
            let own = try await islet.request(.GET, "/v1/overview", key: bike)
            #expect(own.json["counts"]?["updates"] == 2 && own.json["counts"]?["dropped"] == ["olderTimestamp": 1], "\(own.text)")
        }
    }

    /// What the OpenAPI document finds wrong with a `GET`'s reply: nothing, it should be.
    static func undocumented(_ reply: Reply, _ path: String) throws -> [String] {
        try OpenAPITests.embedded().problems("GET", path, status: reply.status, contentType: reply.headers.first(name: "Content-Type"), body: reply.text)
    }

    /// A sandbox credential that sends to a closed port: a delivery is written, never sent.
    static let credential = #"""
        {"teamId":"TEAMPIZZA1","keyId":"PIZZA12345","environment":"development","url":"https://127.0.0.1:9",
         "privateKey":"-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgWnlB5FCZ1iUtUYhw\nevUlmHleXeJqm+BrGbsbJ00b8JehRANCAASbTQTwv9mENm17rk1KCSDXWmfeGtgO\ntDi7giMcIc7cjh1dsHYdHEInyNLc/HbPNqooYP3AQGAFGeqeC/9kqjvR\n-----END PRIVATE KEY-----\n"}
        """#
}

extension Optional<JSONValue> {
    /// The array's items; none when the value is not an array.
    var items: [JSONValue] {
        if case .array(let items)? = self { return items }
        return []
    }
}
