import Foundation
import IsletClient
import IsletCore
import IsletTestSupport
import Testing

/// `POST /v1/apps/{b}/sends` over HTTP (docs/audiences.md): a send naming 20,000 users is taken
/// whatever `server.maxBodySize` says, with or without an `Idempotency-Key`, and answered before
/// any of it is resolved; one over the most is refused.
@Suite("Sends over HTTP", .hangDetector)
struct SendRouteTests {
    @Test func aSendForTwentyThousandUsersIsTakenAndAnsweredBeforeItRuns() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.match")
            let users = (0..<20_000).map { _ in "\"user-\(UUID().uuidString)\"" }.joined(separator: ",")
            let body = #"{"action": "end", "key": "match-123", "audience": {"users": [\#(users)]}, "at": 4102444800}"#
            #expect(body.utf8.count > 64 * 1024, "over the default server.maxBodySize")
            let withAndWithoutAKey: [[(String, String)]] = [[], [("Idempotency-Key", "big-1")]]
            for headers in withAndWithoutAKey {
                let answer = try await islet.request(.POST, "/v1/apps/com.example.match/sends", key: key, body: body, headers: headers)
                #expect(answer.status == 202, "\(answer.text.prefix(300))")
                #expect(answer.json["status"] == "scheduled" && answer.json["counts"]?["targeted"] == 0)
            }
            let tooMany = #"{"action": "end", "key": "k", "audience": {"users": [\#(users),"one-more"]}}"#
            let refused = try await islet.request(.POST, "/v1/apps/com.example.match/sends", key: key, body: tooMany)
            #expect(refused.status == 400 && refused.reason == "invalidRequest")
        }
    }

    /// A single start, update or end given `at` is answered `202` with the send that keeps it,
    /// which the sends' routes follow, move and cancel; without `at`, it is done at once.
    @Test func aSingleStartUpdateOrEndGivenAtIsKeptAsASend() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.match")
            let other = try await islet.createApp("com.example.other")
            let start = #"{"attributesType": "MatchAttributes", "content": {"state": {"score": "0-0"}}"#
            let later = try await islet.request(.POST, "/v1/activities", key: key, body: start + #", "at": 4102444800}"#)
            #expect(later.status == 202 && later.json["status"] == "scheduled", "\(later.text.prefix(300))")
            #expect(later.json["body"]?["audience"] == ["devices": ["default"]] && later.json["body"]?["at"] == 4102444800)
            let listed = try await islet.request(.GET, "/v1/activities", key: key)
            #expect(listed.json["activities"]?.arrayValue?.isEmpty == true, "nothing started yet")
            let sendId = try #require(later.json["id"]?.stringValue)
            let moved = try await islet.request(.PATCH, "/v1/apps/com.example.match/sends/\(sendId)", key: key, body: #"{"at": 4102448400}"#)
            #expect(moved.status == 200 && moved.json["body"]?["at"] == 4102448400)
            let cancelled = try await islet.request(.DELETE, "/v1/apps/com.example.match/sends/\(sendId)", key: key)
            #expect(cancelled.json["status"] == "cancelled")

            let now = try await islet.request(.POST, "/v1/activities", key: key, body: start + "}")
            #expect(now.status == 201)
            let id = try #require(now.json["id"]?.stringValue)
            let update = try await islet.request(.POST, "/v1/activities/\(id)/update", key: key, body: #"{"content": {"state": {"score": "1-0"}}, "at": 4102444800}"#)
            #expect(update.status == 202 && update.json["body"]?["audience"] == ["activity": .string(id)] && update.json["body"]?["action"] == "update")
            let end = try await islet.request(.POST, "/v1/activities/\(id)/end", key: key, body: #"{"at": 4102444800}"#)
            #expect(end.status == 202 && end.json["body"]?["action"] == "end")
            let still = try await islet.request(.GET, "/v1/activities/\(id)", key: key)
            #expect(still.json["content"]?["state"] == ["score": "0-0"] && still.json["activityState"] == "active")

            // IsletClient's calls with `at` say the same.
            let client = IsletClient(server: "http://127.0.0.1:\(islet.port)", key: key, http: islet.http)
            let kept = try await client.end(id, EndRequest(dismissalPolicy: .immediate), at: Date(timeIntervalSince1970: 4_102_444_800))
            #expect(kept.status == .scheduled && kept.body.audience == .activity(id) && kept.body.dismissalPolicy == .immediate)
            let keptStart = try await client.start(ActivityRequest(attributesType: "MatchAttributes", content: ActivityContent(state: [:])), at: Date(timeIntervalSince1970: 4_102_444_800))
            #expect(keptStart.body.action == .start && keptStart.body.audience == .devices(["default"]))

            // Refused where it enters: a date the API does not take, another app's activity.
            let badDate = try await islet.request(.POST, "/v1/activities/\(id)/update", key: key, body: #"{"content": {"state": {}}, "at": -5}"#)
            #expect(badDate.status == 400 && badDate.reason == "invalidRequest")
            let theirs = try await islet.request(.POST, "/v1/activities/\(id)/end", key: other, body: #"{"at": 4102444800}"#)
            #expect(theirs.status == 404 && theirs.reason == "activityNotFound")
            // An activity that has ended takes no later change, as now.
            _ = try await islet.request(.POST, "/v1/activities/\(id)/end", key: key, body: "{}")
            let ended = try await islet.request(.POST, "/v1/activities/\(id)/update", key: key, body: #"{"content": {"state": {}}, "at": 4102444800}"#)
            #expect(ended.status == 409 && ended.reason == "activityEnded", "\(ended.text)")
            let badStart = try await islet.request(.POST, "/v1/activities", key: key, body: #"{"attributesType": "", "content": {"state": {}}, "at": 4102444800}"#)
            #expect(badStart.status == 400)
            // `{"activity": id}` is Islet's own audience, as `{"send": id}` is: a caller's send
            // names users, tags, devices or all.
            let named = try await islet.request(
                .POST, "/v1/apps/com.example.match/sends", key: key,
                body: #"{"action": "end", "key": "k", "audience": {"activity": "\#(id)"}}"#
            )
            #expect(named.status == 400 && named.reason == "invalidRequest", "\(named.text)")
        }
    }
}
