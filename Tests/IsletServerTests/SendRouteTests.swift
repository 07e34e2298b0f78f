import Foundation
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
}
