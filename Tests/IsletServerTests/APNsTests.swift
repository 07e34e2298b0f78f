import AsyncHTTPClient
import Crypto
import Foundation
import IsletAPNs
import IsletClient
import IsletCore
import IsletServer
import IsletTestSupport
import NIOCore
import NIOHTTP1
import NIOSSL
import Testing

let t0Seconds = Int(t0.timeIntervalSince1970)
func at(_ seconds: TimeInterval) -> Date { t0.addingTimeInterval(seconds) }

@Suite("APNs-compatible endpoint", .hangDetector)
struct APNsTests {
    // MARK: Device pushes

    /// A provider token's `iat` is whole seconds since 1970, as Apple specifies it.
    @Test func aProviderTokensIssueTimeIsWholeSeconds() async throws {
        let signer = try await ProviderTokenSigner(p8: P256.Signing.PrivateKey().pemRepresentation, keyId: "KEY1234567", teamId: "TEAM123456")
        let token = try await signer.token(issuedAt: Date(timeIntervalSince1970: 1_795_559_981.372))
        var claims = String(token.split(separator: ".")[1]).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        claims += String(repeating: "=", count: (4 - claims.utf8.count % 4) % 4)
        let json = String(decoding: try #require(Data(base64Encoded: claims)), as: UTF8.self)
        #expect(json.contains(#""iat":1795559981"#) && !json.contains("1795559981."), "\(json)")
    }

    @Test func updateEndAndTheirEffectsLikeADevice() async throws {
        try await withIslet { islet in
            try await islet.withProvider { provider in
                let activity = try await provider.startWithToken()
                let token = try #require(activity.pushToken)
                let updated = try await provider.push(
                    token,
                    #"{"aps":{"event":"update","timestamp":\#(t0Seconds + 10),"content-state":{"step":2},"stale-date":\#(t0Seconds + 600),"relevance-score":75,"alert":{"title":{"loc-key":"Order %@","loc-args":["42"]},"body":"On its way","sound":"default"}}}"#,
                    headers: [("apns-id", "123e4567-e89b-12d3-a456-4266554400a0")]
                )
                #expect(updated.status == 200)
                #expect(updated.requestId == "123e4567-e89b-12d3-a456-4266554400a0")
                let client = islet.isletClient(key: provider.apiKey)
                let after = try await client.activity(activity.id)
                #expect(after.content == ActivityContent(state: ["step": 2], staleDate: at(600), relevanceScore: 75))
                let history = try await client.history(activity.id)
                #expect(history.last?.type == .alert)
                #expect(history.last?.data == ["title": "Order 42", "body": "On its way", "sound": "default"])

                let ended = try await provider.push(
                    token, #"{"aps":{"event":"end","timestamp":\#(t0Seconds + 20),"content-state":{"step":3},"dismissal-date":\#(t0Seconds + 900)}}"#
                )
                #expect(ended.status == 200)
                let final = try await client.activity(activity.id)
                #expect(final.state == .ended)
                #expect(final.content.state == ["step": 3])
                #expect(final.dismissAt == at(900))
            }
        }
    }

    /// APNs timestamps are whole seconds: two updates sent in one second carry the same one, and
    /// both must show, so an equal timestamp is applied (only an older one is dropped). A request
    /// that reached Apple twice — the sender killed while it waited for the answer, then sending it
    /// again (docs/delivery.md) — is so applied twice, the second changing nothing.
    @Test func anUpdateWithTheLastTimestampIsAppliedAndOnlyAnOlderOneIsDropped() async throws {
        try await withIslet { islet in
            try await islet.withProvider { provider in
                let activity = try await provider.startWithToken()
                let token = activity.pushToken!
                let client = islet.isletClient(key: provider.apiKey)
                let second = t0Seconds + 100
                #expect(try await provider.push(token, Provider.update(#"{"step":2}"#, timestamp: second)).status == 200)
                #expect(try await provider.push(token, Provider.update(#"{"step":3}"#, timestamp: second)).status == 200)
                #expect(try await client.activity(activity.id).content.state == ["step": 3])
                // The same request again, as a sender that was killed sends it: applied, nothing new shown.
                #expect(try await provider.push(token, Provider.update(#"{"step":3}"#, timestamp: second)).status == 200)
                #expect(try await provider.push(token, Provider.update(#"{"step":1}"#, timestamp: second - 1)).status == 200)
                let history = try await client.history(activity.id)
                #expect(history.filter { $0.type == .contentUpdated }.compactMap { $0.data["content"]?["state"]?["step"] } == [2, 3, 3])
                #expect(history.filter { $0.type == .updateIgnored }.compactMap { $0.data["reason"]?.stringValue } == ["olderTimestamp"])
                #expect(try await client.activity(activity.id).content.state == ["step": 3])
            }
        }
    }

    @Test func whatADeviceWouldDropIsAcceptedAndRecordedWithItsReason() async throws {
        try await withIslet { islet in
            try await islet.withProvider { provider in
                let activity = try await provider.startWithToken()
                let token = activity.pushToken!
                let client = islet.isletClient(key: provider.apiKey)
                #expect(try await provider.push(token, Provider.update(#"{"step":5}"#, timestamp: t0Seconds + 100)).status == 200)
                // Older than the last applied update.
                #expect(try await provider.push(token, Provider.update(#"{"step":4}"#, timestamp: t0Seconds + 50)).status == 200)
                // No event, no content state, content state not a dictionary.
                #expect(try await provider.push(token, #"{"aps":{"content-state":{}}}"#).status == 200)
                #expect(try await provider.push(token, #"{"aps":{"event":"update"}}"#).status == 200)
                // A start sent to an activity's token.
                #expect(try await provider.push(token, #"{"aps":{"event":"start","content-state":{},"attributes-type":"T","attributes":{},"alert":"hi"}}"#).status == 200)
                let ignored = try await client.history(activity.id).filter { $0.type == .updateIgnored }
                #expect(ignored.compactMap { $0.data["reason"]?.stringValue } == ["olderTimestamp", "invalidPayload", "invalidPayload", "invalidPayload"])
                #expect(ignored[1].data["message"]?.stringValue?.contains("aps.event is missing") == true)
                #expect(try await client.activity(activity.id).content.state == ["step": 5])

                _ = try await client.end(activity.id)
                #expect(try await provider.push(token, Provider.update(#"{"step":6}"#)).status == 200)
                let last = try await client.history(activity.id).last
                #expect(last?.data["reason"] == "activityEnded")
            }
        }
    }

    @Test func contentStateThatDoesNotFitTheRegisteredShapeIsDropped() async throws {
        try await withIslet { islet in
            try await islet.withProvider { provider in
                let client = islet.isletClient(key: provider.apiKey)
                _ = try await client.putActivityType(
                    bundleId: provider.bundleId, name: "DeliveryAttributes", attributes: ["order": "string"],
                    contentState: ["step": "integer", "status": ["enum": ["packed", "shipped"]], "eta": "date?"]
                )
                let activity = try await provider.startWithToken(state: ["step": 1, "status": "packed"])
                let token = activity.pushToken!
                #expect(try await provider.push(token, Provider.update(#"{"step":2,"status":"shipped","eta":755000000}"#)).status == 200)
                #expect(try await provider.push(token, Provider.update(#"{"step":3,"status":"lost"}"#)).status == 200)
                #expect(try await provider.push(token, Provider.update(#"{"status":"shipped"}"#)).status == 200)
                #expect(try await provider.push(token, Provider.update(#"{"step":3,"status":"shipped","eta":"tomorrow"}"#)).status == 200)
                let ignored = try await client.history(activity.id).filter { $0.type == .updateIgnored }
                #expect(ignored.count == 3)
                #expect(ignored.allSatisfy { $0.data["reason"] == "contentStateMismatch" })
                let messages = ignored.compactMap { $0.data["message"]?.stringValue }
                #expect(messages[0].contains("content-state.status: expected one of packed, shipped, got \"lost\""))
                #expect(messages[1].contains("content-state.step: missing"))
                #expect(messages[2].contains("content-state.eta: expected a date"))
                #expect(try await client.activity(activity.id).content.state == ["step": 2, "status": "shipped", "eta": 755_000_000])
                // The REST API refuses the same misfit outright.
                let refused = try await islet.request(
                    .POST, "/v1/activities/\(activity.id)/update", key: provider.apiKey, body: #"{"content":{"state":{"step":"x","status":"packed"}}}"#
                )
                #expect(refused.status == 400)
                #expect(refused.reason == "contentStateMismatch")
                let misfit = try await islet.request(
                    .POST, "/v1/activities", key: provider.apiKey,
                    body: #"{"attributesType":"DeliveryAttributes","attributes":{"order":42},"content":{"state":{"step":1,"status":"packed"}}}"#
                )
                #expect(misfit.reason == "attributesMismatch")
            }
        }
    }

    @Test func strictModeRefusesWhatADeviceWouldDrop() async throws {
        try await withIslet { islet in
            try await islet.withProvider { provider in
                let client = islet.isletClient(key: provider.apiKey)
                let app = try await client.setStrictPushes(true, bundleId: provider.bundleId)
                #expect(app.strictPushes)
                let activity = try await provider.startWithToken()
                let token = activity.pushToken!
                #expect(try await provider.push(token, Provider.update(#"{"step":5}"#, timestamp: t0Seconds + 100)).status == 200)
                let older = try await provider.push(token, Provider.update(#"{"step":4}"#, timestamp: t0Seconds + 50))
                #expect(older.status == 400)
                #expect(older.reason == "olderTimestamp")
                // Apple's body, and the words in Islet's own header.
                #expect(older.body == #"{"reason":"olderTimestamp"}"#)
                #expect(older.detail?.contains("older than the last applied update") == true)
                let invalid = try await provider.push(token, #"{"aps":{"event":"update"}}"#)
                #expect(invalid.reason == "invalidPayload")
                // A timestamp that is not a number cannot be ordered: dropped, not taken as "now".
                let unordered = try await provider.push(token, #"{"aps":{"event":"update","content-state":{"step":6},"timestamp":"soon"}}"#)
                #expect(unordered.reason == "invalidPayload")
                #expect(unordered.detail?.contains("aps.timestamp must be a number") == true)
                // Still recorded in the history.
                let ignored = try await client.history(activity.id).filter { $0.type == .updateIgnored }
                #expect(ignored.compactMap { $0.data["action"]?.stringValue } == ["update", "update", "update"])
            }
        }
    }

    @Test func priorityTenPushesSpendAnHourlyBudgetAndPriorityFiveDoesNot() async throws {
        try await withIslet({ $0.lifecycle.pushBudgetPerHour = 3; $0.lifecycle.frequentPushBudgetPerHour = 5 }) { islet in
            try await islet.withProvider { provider in
                let activity = try await provider.startWithToken()
                let token = activity.pushToken!
                for step in 1...3 {
                    #expect(try await provider.push(token, Provider.update(#"{"step":\#(step)}"#)).status == 200)
                }
                // Over budget: throttled, but priority 5 still gets through.
                #expect(try await provider.push(token, Provider.update(#"{"step":4}"#)).status == 200)
                #expect(try await provider.push(token, Provider.update(#"{"step":5}"#), headers: [("apns-priority", "5")]).status == 200)
                // Priority 1 (power-saving) is taken as Apple takes it, and spends nothing either.
                #expect(try await provider.push(token, Provider.update(#"{"step":5}"#), headers: [("apns-priority", "1")]).status == 200)
                let client = islet.isletClient(key: provider.apiKey)
                var history = try await client.history(activity.id)
                #expect(history.filter { $0.type == .updateIgnored }.compactMap { $0.data["reason"]?.stringValue } == ["budgetExceeded"])
                // The third push ran the budget out: said once, with the count (a webhook's `budget.exhausted`).
                let exhausted = history.filter { $0.type == .budgetExhausted }
                #expect(exhausted.count == 1 && exhausted.first?.data["spent"] == 3 && exhausted.first?.data["perHour"] == 3)
                #expect(try await client.activity(activity.id).content.state == ["step": 5])
                // An hour later the budget is back.
                islet.clock.advance(by: 3600)
                #expect(try await provider.push(token, Provider.update(#"{"step":6}"#)).status == 200)
                history = try await client.history(activity.id)
                #expect(history.last?.type == .contentUpdated)
                let metrics = try await islet.request(.GET, "/metrics").text
                #expect(metrics.contains(#"islet_pushes_total{outcome="dropped",reason="budgetExceeded"} 1"#))
                #expect(metrics.contains(#"islet_updates_ignored_total{reason="budgetExceeded"} 1"#))
            }
        }
    }

    @Test func frequentUpdatesRaiseTheBudget() async throws {
        try await withIslet({ $0.lifecycle.pushBudgetPerHour = 1; $0.lifecycle.frequentPushBudgetPerHour = 3 }) { islet in
            try await islet.withProvider { provider in
                _ = try await islet.isletClient(key: islet.admin).updateSettings(
                    device: "default", bundleId: provider.bundleId, frequentUpdates: true
                )
                let activity = try await provider.startWithToken()
                for step in 1...4 {
                    _ = try await provider.push(activity.pushToken!, Provider.update(#"{"step":\#(step)}"#))
                }
                let history = try await islet.isletClient(key: provider.apiKey).history(activity.id)
                #expect(history.filter { $0.type == .contentUpdated }.count == 3)
                #expect(history.filter { $0.type == .updateIgnored }.count == 1)
            }
        }
    }

    // MARK: Push-to-start

    @Test func pushToStartStartsAnActivityWithItsOwnToken() async throws {
        try await withIslet { islet in
            try await islet.withProvider { provider in
                let client = islet.isletClient(key: provider.apiKey)
                let settings = try await client.settings(device: "default")
                let startToken = try #require(settings.first?.pushToStartToken)
                let events = try await client.events()
                let response = try await provider.push(
                    startToken,
                    #"{"aps":{"event":"start","timestamp":\#(t0Seconds),"attributes-type":"DeliveryAttributes","attributes":{"order":"7"},"content-state":{"step":0},"alert":{"title":"Order 7","body":"Preparing"},"input-push-token":1}}"#
                )
                #expect(response.status == 200)
                let started = try await within { try await collect(events, count: 3) }
                #expect(started.map(\.type) == [.started, .pushTokenUpdated, .alert])
                let activity = try await client.activity(try #require(started[0].activityId))
                #expect(activity.attributes == ["order": "7"])
                #expect(activity.pushToken?.count == 64)
                // A push started it (an `activity.started` webhook's `source`).
                #expect(activity.source == .pushToStart)
                // Its token takes updates.
                #expect(try await provider.push(activity.pushToken!, Provider.update(#"{"step":1}"#)).status == 200)
                #expect(try await client.activity(activity.id).content.state == ["step": 1])
            }
        }
    }

    /// A start sent again under its `apns-collapse-id` (a provider that lost the answer and
    /// sent it once more) shows as the one card it is, while that card is live; without the
    /// header each start is a card of its own, as on an iPhone.
    @Test func aPushToStartSentAgainUnderItsCollapseIdIsOneCard() async throws {
        try await withIslet { islet in
            try await islet.withProvider { provider in
                let client = islet.isletClient(key: provider.apiKey)
                let startToken = try #require(try await client.settings(device: "default").first?.pushToStartToken)
                let start = #"{"aps":{"event":"start","timestamp":\#(t0Seconds),"attributes-type":"DeliveryAttributes","attributes":{"order":"7"},"content-state":{"step":0},"alert":{"title":"Order 7","body":"Preparing"}}}"#
                func cards() async throws -> [Activity] {
                    try await client.activities(ActivityFilter(states: [.pending, .active, .stale]))
                }
                let collapsed = [("apns-collapse-id", "order-7")]
                let events = try await client.events()
                #expect(try await provider.push(startToken, start, headers: collapsed).status == 200)
                #expect(try await provider.push(startToken, start, headers: collapsed).status == 200)
                let one = try await cards()
                #expect(one.count == 1, "\(one.map(\.id))")
                let recorded = try await within { try await collect(events, count: 3) }
                #expect(recorded.map(\.type) == [.started, .alert, .updateIgnored])
                #expect(recorded[2].data["message"]?.stringValue?.contains("already shown") == true)

                // Once that card has ended, the same collapse id starts a new one.
                _ = try await client.end(try #require(one.first?.id), EndRequest(dismissalPolicy: .immediate))
                #expect(try await provider.push(startToken, start, headers: collapsed).status == 200)
                #expect(try await cards().count == 1)

                // Without the header, a start sent twice is two cards.
                #expect(try await provider.push(startToken, start).status == 200)
                #expect(try await provider.push(startToken, start).status == 200)
                #expect(try await cards().count == 3)
            }
        }
    }

    @Test func aPushToStartTheDeviceRefusesIsRecordedOnTheDevice() async throws {
        try await withIslet({ $0.lifecycle.maxActivitiesPerApp = 1 }) { islet in
            try await islet.withProvider { provider in
                let client = islet.isletClient(key: provider.apiKey)
                let startToken = try #require(try await client.settings(device: "default").first?.pushToStartToken)
                _ = try await provider.startWithToken()
                let events = try await client.events()
                let start = #"{"aps":{"event":"start","attributes-type":"T","attributes":{},"content-state":{},"alert":"hi"}}"#
                #expect(try await provider.push(startToken, start).status == 200)
                #expect(try await provider.push(startToken, #"{"aps":{"event":"start","attributes-type":"T","attributes":{},"content-state":{}}}"#).status == 200)
                let both = #"{"aps":{"event":"start","attributes-type":"T","attributes":{},"content-state":{},"alert":"hi","input-push-token":1,"input-push-channel":"abc"}}"#
                #expect(try await provider.push(startToken, both).status == 200)
                #expect(try await provider.push(startToken, Provider.update("{}")).status == 200)
                let recorded = try await within { try await collect(events, count: 4) }
                #expect(recorded.map(\.type) == [.updateIgnored, .updateIgnored, .updateIgnored, .updateIgnored])
                #expect(recorded.allSatisfy { $0.activityId == nil && $0.deviceId == "default" })
                #expect(recorded.compactMap { $0.data["reason"]?.stringValue } == ["targetMaximumExceeded", "invalidPayload", "invalidPayload", "invalidPayload"])
                #expect(recorded.compactMap { $0.data["action"]?.stringValue } == ["start", "start", "start", "update"])
                #expect(recorded[2].data["message"]?.stringValue?.contains("not both") == true)
                // In strict mode the device's refusal is the response.
                _ = try await client.setStrictPushes(true, bundleId: provider.bundleId)
                let strict = try await provider.push(startToken, start)
                #expect(strict.status == 400)
                #expect(strict.reason == "targetMaximumExceeded")
            }
        }
    }

    // MARK: Tokens

    @Test func rotatedAndDismissedTokensAnswer410() async throws {
        try await withIslet { islet in
            try await islet.withProvider { provider in
                let admin = islet.isletClient(key: islet.admin)
                let activity = try await provider.startWithToken()
                let old = activity.pushToken!
                islet.clock.advance(by: 60)
                let rotated = try await admin.rotatePushToken(activity.id)
                #expect(rotated.pushToken != old)
                let expired = try await provider.push(old, Provider.update(#"{"step":2}"#))
                #expect(expired.status == 410)
                #expect(expired.reason == "ExpiredToken")
                #expect(expired.timestamp == Int64(at(60).timeIntervalSince1970 * 1000))
                #expect(try await provider.push(rotated.pushToken!, Provider.update(#"{"step":2}"#)).status == 200)
                let history = try await islet.isletClient(key: provider.apiKey).history(activity.id)
                #expect(history.filter { $0.type == .pushTokenUpdated }.count == 2)

                _ = try await admin.end(activity.id, EndRequest(dismissalPolicy: .immediate))
                let gone = try await provider.push(rotated.pushToken!, Provider.update(#"{"step":3}"#))
                #expect(gone.status == 410)
                #expect(gone.reason == "Unregistered")
                #expect(gone.timestamp == Int64(at(60).timeIntervalSince1970 * 1000))
            }
        }
    }

    @Test func pushToStartTokensRotateByHandAndOnASchedule() async throws {
        try await withIslet({ $0.apns.tokenRotation = 3600 }) { islet in
            try await islet.withProvider { provider in
                let client = islet.isletClient(key: provider.apiKey)
                let first = try #require(try await client.settings(device: "default").first?.pushToStartToken)
                let rotated = try await islet.request(
                    .POST, "/v1/devices/default/apps/\(provider.bundleId)/rotate-push-to-start-token", key: islet.admin
                )
                let second = try #require(rotated.json["pushToStartToken"]?.stringValue)
                #expect(second != first)
                #expect(try await provider.push(first, #"{"aps":{"event":"start"}}"#).reason == "ExpiredToken")
                let activity = try await provider.startWithToken()
                let events = try await client.events()
                islet.clock.advance(by: 3600)
                let updates = try await within { try await collect(events, count: 2) }
                #expect(Set(updates.map(\.type)) == [.pushTokenUpdated])
                #expect(Set(updates.compactMap { $0.data["kind"]?.stringValue }) == ["activity", "pushToStart"])
                #expect(try await client.activity(activity.id).pushToken != activity.pushToken)
            }
        }
    }

    // MARK: Requests APNs refuses

    @Test func headerRefusalsUseApplesReasons() async throws {
        try await withIslet { islet in
            try await islet.withProvider { provider in
                let token = try await provider.startWithToken().pushToken!
                let update = Provider.update(#"{"step":2}"#)
                let jwt = try await provider.jwt()
                func send(_ headers: [(String, String)], path: String? = nil, body: String? = nil) async throws -> APNsClient.Response {
                    try await provider.apns.send(
                        .POST, path ?? "/3/device/\(token)", headers: headers, body: Data((body ?? update).utf8), providerToken: jwt
                    )
                }
                let topic = ("apns-topic", "\(provider.bundleId).push-type.liveactivity")
                let pushType = ("apns-push-type", "liveactivity")
                let cases: [([(String, String)], Int, String)] = [
                    ([pushType], 400, "MissingTopic"),
                    ([("apns-topic", provider.bundleId), pushType], 400, "TopicDisallowed"),
                    ([("apns-topic", "com.example.other.push-type.liveactivity"), pushType], 400, "TopicDisallowed"),
                    ([topic], 400, "InvalidPushType"),
                    ([topic, ("apns-push-type", "alert")], 400, "InvalidPushType"),
                    ([topic, pushType, ("apns-priority", "7")], 400, "BadPriority"),
                    ([topic, pushType, ("apns-priority", "0")], 400, "BadPriority"),
                    ([topic, pushType, ("apns-expiration", "soon")], 400, "BadExpirationDate"),
                    ([topic, pushType, ("apns-priority", "+10")], 400, "BadPriority"),
                    ([topic, pushType, ("apns-priority", "010")], 400, "BadPriority"),
                    ([topic, pushType, ("apns-expiration", "+5")], 400, "BadExpirationDate"),
                    ([topic, pushType, ("apns-expiration", "-0")], 400, "BadExpirationDate"),
                    ([topic, pushType, ("apns-id", "not-a-uuid")], 400, "BadMessageId"),
                    ([topic, pushType, ("apns-collapse-id", String(repeating: "c", count: 65))], 400, "BadCollapseId"),
                    ([topic, pushType, ("apns-priority", "10"), ("apns-priority", "5")], 400, "DuplicateHeaders"),
                    ([topic, ("apns-push-type", "LiveActivity")], 200, ""),
                ]
                for (headers, status, reason) in cases {
                    let response = try await send(headers)
                    #expect(response.status == status, "\(headers)")
                    if !reason.isEmpty { #expect(response.reason == reason, "\(headers)") }
                    #expect(response.requestId?.count == 36)
                }
                let good = [topic, pushType]
                #expect(try await send(good, path: "/3/device/00ff").reason == "BadDeviceToken")
                #expect(try await send(good, path: "/3/device/" + String(repeating: "ab", count: 32)).reason == "BadDeviceToken")
                #expect(try await send(good, path: "/3/device").reason == "MissingDeviceToken")
                #expect(try await send(good, body: "").reason == "PayloadEmpty")
                #expect(try await send(good, body: "{not json").reason == "BadRequestPayload")
                #expect(try await send(good, body: #"{"data":1}"#).reason == "BadRequestPayload")
                let large = try await send(good, body: #"{"aps":{"event":"update","content-state":{"x":"\#(String(repeating: "x", count: 4100))"}}}"#)
                #expect(large.status == 413)
                #expect(large.reason == "PayloadTooLarge")
                let wrongPath = try await provider.apns.send(.POST, "/3/devices/\(token)", headers: good, body: Data(update.utf8), providerToken: jwt)
                #expect(wrongPath.status == 404)
                #expect(wrongPath.reason == "BadPath")
                let wrongMethod = try await provider.apns.send(.GET, "/3/device/\(token)", headers: good, body: nil, providerToken: jwt)
                #expect(wrongMethod.status == 405)
                #expect(wrongMethod.reason == "MethodNotAllowed")
                for (method, path) in [(HTTPMethod.PUT, "/1/apps/\(provider.bundleId)/channels"), (.POST, "/1/apps/\(provider.bundleId)/all-channels")] {
                    let refused = try await provider.apns.send(method, path, headers: [], body: nil, providerToken: jwt)
                    #expect(refused.status == 405)
                    #expect(refused.reason == "MethodNotAllowed")
                }
            }
        }
    }

    @Test func aTokenOfAnotherAppIsNotForThisTopic() async throws {
        try await withIslet { islet in
            let other = try await islet.withProvider("com.example.other", keyId: "OTHERKEY01") { provider in
                try await provider.startWithToken().pushToken!
            }
            try await islet.withProvider { provider in
                let response = try await provider.push(other, Provider.update(#"{"step":2}"#))
                #expect(response.status == 400)
                #expect(response.reason == "DeviceTokenNotForTopic")
                // Whoever holds another app's token learns that it is another app's, as Apple
                // answers, never whose.
                #expect(response.detail?.contains("com.example.other") == false, "\(response)")
            }
        }
    }

    @Test func providerTokensAreCheckedAsAPNsChecksThem() async throws {
        try await withIslet { islet in
            try await islet.withProvider { provider in
                let token = try await provider.startWithToken().pushToken!
                let update = Provider.update(#"{"step":2}"#)
                func push(jwt: String?) async throws -> APNsClient.Response {
                    try await provider.apns.send(
                        .POST, "/3/device/\(token)",
                        headers: [("apns-topic", "\(provider.bundleId).push-type.liveactivity"), ("apns-push-type", "liveactivity")],
                        body: Data(update.utf8), providerToken: jwt
                    )
                }
                let missing = try await push(jwt: nil)
                #expect(missing.status == 403)
                #expect(missing.reason == "MissingProviderToken")
                #expect(try await push(jwt: "not.a.jwt").reason == "InvalidProviderToken")
                // Signed by a key that is not the registered one.
                let stranger = try await ProviderTokenSigner(
                    p8: P256.Signing.PrivateKey().pemRepresentation, keyId: "KEY1234567", teamId: "TEAM123456"
                )
                #expect(try await push(jwt: try await stranger.token(issuedAt: islet.clock.now())).reason == "InvalidProviderToken")
                // An unknown key id, and the right key with another team.
                let unknownKid = try await ProviderTokenSigner(
                    p8: P256.Signing.PrivateKey().pemRepresentation, keyId: "NOSUCHKEY0", teamId: "TEAM123456"
                )
                #expect(try await push(jwt: try await unknownKid.token(issuedAt: islet.clock.now())).reason == "InvalidProviderToken")
                // Older than an hour.
                let old = try await provider.jwt(issuedAt: islet.clock.now().addingTimeInterval(-3601))
                let expired = try await push(jwt: old)
                #expect(expired.status == 403)
                #expect(expired.reason == "ExpiredProviderToken")
                // A token that was fine expires as the server's clock moves on.
                let fresh = try await provider.jwt()
                #expect(try await push(jwt: fresh).status == 200)
                islet.clock.advance(by: 3601)
                #expect(try await push(jwt: fresh).reason == "ExpiredProviderToken")
            }
        }
    }

    /// Tokens that name another algorithm than ES256 — none, HMAC keyed with the registered
    /// public key's PEM (the classic confusion), RSA, a bare or truncated signature — are all
    /// refused, whatever their claims say.
    @Test func algorithmConfusionIsRefused() async throws {
        try await withIslet { islet in
            try await islet.withProvider { provider in
                let token = try await provider.startWithToken().pushToken!
                let listed = try await islet.request(.GET, "/v1/apps/\(provider.bundleId)/keys", key: provider.apiKey)
                guard case .array(let keys) = listed.json["keys"], let publicPEM = keys.first?["publicKey"]?.stringValue else {
                    Issue.record("no key in \(listed.text)")
                    return
                }
                func base64URL(_ data: some DataProtocol) -> String {
                    Data(data).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                        .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
                }
                let iat = Int(islet.clock.now().timeIntervalSince1970)
                let claims = base64URL(Data(#"{"iss":"TEAM123456","iat":\#(iat)}"#.utf8))
                func header(_ alg: String) -> String { base64URL(Data(#"{"alg":"\#(alg)","kid":"KEY1234567"}"#.utf8)) }
                func hmac(_ alg: String) -> String {
                    let input = header(alg) + "." + claims
                    let mac = HMAC<SHA256>.authenticationCode(for: Data(input.utf8), using: SymmetricKey(data: Data(publicPEM.utf8)))
                    return input + "." + base64URL(Data(mac))
                }
                let genuine = try await provider.jwt()
                let genuineSignature = String(genuine.split(separator: ".")[2])
                let forged = [
                    header("none") + "." + claims + ".",
                    header("none") + "." + claims,
                    header("NONE") + "." + claims + "." + genuineSignature,
                    hmac("HS256"),
                    header("RS256") + "." + claims + "." + genuineSignature,
                    header("ES384") + "." + claims + "." + genuineSignature,
                    header("ES256") + "." + claims + "." + String(genuineSignature.prefix(20)),
                    // A real signature under claims it did not sign.
                    header("ES256") + "." + base64URL(Data(#"{"iss":"TEAM123456","iat":\#(iat - 1),"x":1}"#.utf8)) + "." + genuineSignature,
                    header("ES256") + "." + claims + "." + base64URL(Data(count: 64)),
                ]
                for jwt in forged {
                    let answer = try await provider.push(token, Provider.update(#"{"step":9}"#), jwt: jwt)
                    #expect(answer.status == 403, "\(jwt)")
                    #expect(answer.reason == "InvalidProviderToken", "\(jwt)")
                }
                #expect(try await provider.push(token, Provider.update(#"{"step":2}"#), jwt: genuine).status == 200)
                #expect(try await islet.request(.GET, "/v1/activities/\(try await provider.startWithToken().id)", key: provider.apiKey).status == 200)
            }
        }
    }

    @Test func keyAndTeamIdsAreASCIILettersAndDigits() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.pizza")
            let publicKey = P256.Signing.PrivateKey().publicKey.pemRepresentation
            for (keyId, status) in [("PIZZA12345", 201), ("\u{C9}CLAIR1234", 400), ("\u{663}\u{663}", 400), ("PIZZA-1234", 400)] {
                let body = try WireFormat.string(["keyId": .string(keyId), "teamId": "TEAMPIZZA1", "publicKey": .string(publicKey)] as JSONValue)
                let reply = try await islet.request(.POST, "/v1/apps/com.example.pizza/keys", key: key, body: body)
                #expect(reply.status == status, "\(keyId): \(reply.text)")
            }
        }
    }

    @Test func theKeyOfAnotherTeamIsRefused() async throws {
        try await withIslet { islet in
            try await islet.withProvider(teamId: "TEAM123456") { provider in
                let token = try await provider.startWithToken().pushToken!
                let otherKey = P256.Signing.PrivateKey()
                let signer = try await ProviderTokenSigner(p8: otherKey.pemRepresentation, keyId: "KEY1234567", teamId: "OTHERTEAM1")
                let response = try await provider.push(token, Provider.update("{}"), jwt: try await signer.token(issuedAt: islet.clock.now()))
                #expect(response.status == 403)
                #expect(response.reason == "InvalidProviderToken")
            }
        }
    }

    @Test func anotherAppsKeyIdBorrowedWithAnotherKeyGivesNoAccessToThatApp() async throws {
        try await withIslet { islet in
            try await islet.withProvider { owner in
                let token = try await owner.startWithToken().pushToken!
                let channel = try await islet.isletClient(key: owner.apiKey).createChannel(bundleId: owner.bundleId, storagePolicy: 0)
                // A second app registers the same key id and team (both are in every JWT) with a key of its own.
                try await islet.withProvider("com.example.rival") { rival in
                    let pushed = try await rival.push(token, Provider.update(#"{"step":9}"#), topic: owner.bundleId)
                    #expect(pushed.status == 400)
                    #expect(pushed.reason == "TopicDisallowed")
                    let listed = try await rival.apns.send(
                        .GET, "/1/apps/\(owner.bundleId)/all-channels", headers: [], body: nil, providerToken: try await rival.jwt()
                    )
                    #expect(listed.status == 403)
                    #expect(listed.reason == "TopicMismatch")
                    let deleted = try await rival.apns.send(
                        .DELETE, "/1/apps/\(owner.bundleId)/channels", headers: [("apns-channel-id", channel.id)], body: nil,
                        providerToken: try await rival.jwt()
                    )
                    #expect(deleted.reason == "TopicMismatch")
                    // The owner's own key still works.
                    #expect(try await owner.push(token, Provider.update(#"{"step":2}"#)).status == 200)
                }
                let channels = try await islet.request(.GET, "/v1/apps/\(owner.bundleId)/channels", key: owner.apiKey)
                #expect(channels.text.contains(channel.id))
            }
        }
    }

    @Test func anIssuedAtFarFromAnyTimeIsRefusedNotACrash() async throws {
        try await withIslet { islet in
            try await islet.withProvider { provider in
                let token = try await provider.startWithToken().pushToken!
                let update = Provider.update(#"{"step":2}"#)
                let future = try await provider.push(token, update, jwt: try await provider.jwt(issuedAt: Date(timeIntervalSince1970: 1e300)))
                #expect(future.reason == "InvalidProviderToken")
                let past = try await provider.push(token, update, jwt: try await provider.jwt(issuedAt: Date(timeIntervalSince1970: -1e300)))
                #expect(past.reason == "ExpiredProviderToken")
                #expect(try await provider.push(token, update).status == 200)
            }
        }
    }

    @Test func http1OnTheAPNsPortGetsAClearRefusal() async throws {
        try await withIslet { islet in
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .file(islet.islet.authorityPath!)
            var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
            configuration.httpVersion = .http1Only
            let response = try await HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration).shuttingDown { http in
                try await APNsClient(server: "https://localhost:\(islet.apnsPort!)", http: http)
                    .send(.POST, "/3/device/abc", headers: [], body: Data("{}".utf8), providerToken: nil)
            }
            #expect(response.status == 505)
            #expect(response.reason == "HTTP2Required")
        }
    }

    // MARK: Broadcast channels

    @Test func broadcastsReachEveryActivityOnTheChannel() async throws {
        try await withIslet { islet in
            try await islet.withProvider { provider in
                let created = try await provider.apns.createChannel(bundleId: provider.bundleId, storagePolicy: 0, providerToken: try await provider.jwt())
                #expect(created.status == 201)
                let channelId = try #require(created.channelId)
                #expect(Data(base64Encoded: channelId) != nil)
                let client = islet.isletClient(key: provider.apiKey)
                var ids: [ActivityID] = []
                for _ in 0..<2 {
                    ids.append(try await client.start(ActivityRequest(
                        attributesType: "Score", content: ActivityContent(state: ["home": 0]), pushType: .channel(channelId)
                    )).id)
                }
                let unrelated = try await provider.startWithToken()
                let response = try await provider.apns.broadcast(
                    bundleId: provider.bundleId, channelId: channelId,
                    payload: Data(#"{"aps":{"event":"update","content-state":{"home":1}}}"#.utf8), providerToken: try await provider.jwt()
                )
                #expect(response.status == 200)
                for id in ids {
                    #expect(try await client.activity(id).content.state == ["home": 1])
                }
                #expect(try await client.activity(unrelated.id).content.state == ["step": 1])
                // An end reaches them too.
                let end = try await provider.apns.broadcast(
                    bundleId: provider.bundleId, channelId: channelId,
                    payload: Data(#"{"aps":{"event":"end","content-state":{"home":2}}}"#.utf8), providerToken: try await provider.jwt()
                )
                #expect(end.status == 200)
                #expect(try await client.activity(ids[0]).state == .ended)
            }
        }
    }

    @Test func aChannelThatKeepsItsLatestMessageHandsItToLateJoiners() async throws {
        try await withIslet { islet in
            try await islet.withProvider { provider in
                let client = islet.isletClient(key: provider.apiKey)
                let keeping = try await client.createChannel(bundleId: provider.bundleId, storagePolicy: 1)
                let forgetting = try await client.createChannel(bundleId: provider.bundleId, storagePolicy: 0)
                for channel in [keeping, forgetting] {
                    let response = try await provider.apns.broadcast(
                        bundleId: provider.bundleId, channelId: channel.id,
                        payload: Data(#"{"aps":{"event":"update","content-state":{"score":"3-1"}}}"#.utf8),
                        providerToken: try await provider.jwt(), extraHeaders: channel.storagePolicy == 1 ? [("apns-expiration", "\(t0Seconds + 3600)")] : []
                    )
                    #expect(response.status == 200)
                }
                func join(_ channel: BroadcastChannel) async throws -> Activity {
                    try await client.start(ActivityRequest(
                        attributesType: "Score", content: ActivityContent(state: ["score": "0-0"]), pushType: .channel(channel.id)
                    ))
                }
                #expect(try await join(keeping).content.state == ["score": "3-1"])
                #expect(try await join(forgetting).content.state == ["score": "0-0"])
                // Kept until its apns-expiration (an hour here).
                islet.clock.advance(by: 3600)
                #expect(try await join(keeping).content.state == ["score": "0-0"])
                // Kept for 8 hours at most, whatever the expiration; and not at all with an expiration of 0.
                func send(_ score: String, expiration: Int) async throws {
                    #expect(try await provider.apns.broadcast(
                        bundleId: provider.bundleId, channelId: keeping.id,
                        payload: Data(#"{"aps":{"event":"update","content-state":{"score":"\#(score)"}}}"#.utf8),
                        providerToken: try await provider.jwt(), extraHeaders: [("apns-expiration", "\(expiration)")]
                    ).status == 200)
                }
                try await send("4-1", expiration: t0Seconds + 3600 + 86_400)
                islet.clock.advance(by: 8 * 3600 - 1)
                #expect(try await join(keeping).content.state == ["score": "4-1"])
                try await send("5-1", expiration: 0)
                #expect(try await join(keeping).content.state == ["score": "4-1"])
                islet.clock.advance(by: 1)
                #expect(try await join(keeping).content.state == ["score": "0-0"])
            }
        }
    }

    @Test func channelManagementAndBroadcastRefusals() async throws {
        try await withIslet({ $0.apns.maxChannelsPerApp = 2 }) { islet in
            try await islet.withProvider { provider in
                let jwt = try await provider.jwt()
                let apns = provider.apns
                let path = "/1/apps/\(provider.bundleId)/channels"
                let first = try await apns.createChannel(bundleId: provider.bundleId, storagePolicy: 1, providerToken: jwt)
                let id = try #require(first.channelId)
                let read = try await apns.send(.GET, path, headers: [("apns-channel-id", id)], body: nil, providerToken: jwt)
                #expect(read.status == 200)
                #expect(read.body == #"{"message-storage-policy":1,"push-type":"LiveActivity"}"#)
                _ = try await apns.createChannel(bundleId: provider.bundleId, storagePolicy: 0, providerToken: jwt)
                let third = try await apns.createChannel(bundleId: provider.bundleId, storagePolicy: 0, providerToken: jwt)
                #expect(third.reason == "CannotCreateChannelConfig")
                let all = try await apns.send(.GET, "/1/apps/\(provider.bundleId)/all-channels", headers: [], body: nil, providerToken: jwt)
                #expect(all.body.contains(id))
                let badBody = try await apns.send(.POST, path, headers: [], body: Data(#"{"message-storage-policy":3}"#.utf8), providerToken: jwt)
                #expect(badBody.reason == "BadRequestParams")
                #expect(try await apns.send(.GET, path, headers: [], body: nil, providerToken: jwt).reason == "MissingChannelId")
                #expect(try await apns.send(.GET, path, headers: [("apns-channel-id", "%%%")], body: nil, providerToken: jwt).reason == "BadChannelId")
                let otherApp = try await apns.send(.GET, "/1/apps/com.example.other/channels", headers: [("apns-channel-id", id)], body: nil, providerToken: jwt)
                #expect(otherApp.status == 403)
                #expect(otherApp.reason == "TopicMismatch")

                func broadcast(_ headers: [(String, String)], body: String = #"{"aps":{"event":"update","content-state":{}}}"#) async throws -> APNsClient.Response {
                    try await apns.send(.POST, "/4/broadcasts/apps/\(provider.bundleId)", headers: headers, body: Data(body.utf8), providerToken: jwt)
                }
                let priority = ("apns-priority", "10")
                let type = ("apns-push-type", "liveactivity")
                #expect(try await broadcast([type, ("apns-expiration", "0")]).reason == "MissingChannelId")
                #expect(try await broadcast([("apns-channel-id", id), type, ("apns-expiration", "0")]).reason == "BadPriority")
                #expect(try await broadcast([("apns-channel-id", id), ("apns-expiration", "0"), priority]).reason == "MissingPushType")
                #expect(try await broadcast([("apns-channel-id", id), ("apns-push-type", "alert"), ("apns-expiration", "0"), priority]).reason == "InvalidPushType")
                #expect(try await broadcast([("apns-channel-id", id), type]).reason == "BadExpirationDate")
                #expect(try await broadcast([("apns-channel-id", "AAAAAAAAAAAAAAAAAAAAAA=="), type, ("apns-expiration", "0"), priority]).reason == "ChannelNotRegistered")
                let start = #"{"aps":{"event":"start","attributes-type":"T","attributes":{},"content-state":{},"alert":"x"}}"#
                #expect(try await broadcast([("apns-channel-id", id), type, ("apns-expiration", "0"), priority], body: start).reason == "BadRequestPayload")
                let large = try await broadcast(
                    [("apns-channel-id", id), type, ("apns-expiration", "0"), priority],
                    body: #"{"aps":{"event":"update","content-state":{"x":"\#(String(repeating: "x", count: 5200))"}}}"#
                )
                #expect(large.status == 413)
                // 5,000 bytes is fine for a broadcast, though not for a device push.
                let big = #"{"aps":{"event":"update","content-state":{"x":"\#(String(repeating: "x", count: 4900))"}}}"#
                #expect(try await broadcast([("apns-channel-id", id), type, ("apns-expiration", "0"), priority], body: big).status == 200)

                let deleted = try await apns.send(.DELETE, path, headers: [("apns-channel-id", id)], body: nil, providerToken: jwt)
                #expect(deleted.status == 204)
                #expect(try await apns.send(.GET, path, headers: [("apns-channel-id", id)], body: nil, providerToken: jwt).reason == "ChannelNotRegistered")
            }
        }
    }

    @Test func aStartWithAnUnknownChannelFails() async throws {
        try await withIslet { islet in
            try await islet.withProvider { provider in
                let startToken = try #require(try await islet.isletClient(key: provider.apiKey).settings(device: "default").first?.pushToStartToken)
                _ = try await islet.isletClient(key: provider.apiKey).setStrictPushes(true, bundleId: provider.bundleId)
                let response = try await provider.push(
                    startToken,
                    #"{"aps":{"event":"start","attributes-type":"T","attributes":{},"content-state":{},"alert":"x","input-push-channel":"AAAAAAAAAAAAAAAAAAAAAA=="}}"#
                )
                #expect(response.reason == "channelNotFound")
            }
        }
    }
}
