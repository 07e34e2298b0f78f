import Foundation
import IsletCore
import IsletTestSupport
import Testing

/// `Idempotency-Key` over HTTP (docs/audiences.md): the same key and request again gets the
/// first answer and changes nothing; another request under the key is 422; keys are per caller.
@Suite("Idempotency-Key", .hangDetector)
struct IdempotencyKeyTests {
    private let start = #"{"attributesType":"RideAttributes","attributes":{"route":"Loop"},"content":{"state":{"speed":1}}}"#

    @Test func aRetriedStartStartsOnceAndIsAnsweredAsTheFirstWas() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.rides")
            let other = try await islet.createApp("com.example.other")
            let first = try await islet.request(.POST, "/v1/activities", key: key, body: start, headers: [("Idempotency-Key", "start-1")])
            let retry = try await islet.request(.POST, "/v1/activities", key: key, body: start, headers: [("Idempotency-Key", "start-1")])
            #expect(first.status == 201 && retry.status == 201 && retry.text == first.text)
            #expect(retry.headers["Idempotent-Replayed"].first == "true" && first.headers["Idempotent-Replayed"].isEmpty)
            let listed = try await islet.request(.GET, "/v1/activities", key: key)
            #expect(listed.json["activities"]?.arrayValue?.count == 1)

            let reused = try await islet.request(
                .POST, "/v1/activities", key: key, body: start.replacingOccurrences(of: "\"speed\":1", with: "\"speed\":2"),
                headers: [("Idempotency-Key", "start-1")]
            )
            #expect(reused.status == 422 && reused.reason == "idempotencyKeyReused")
            // Another app's key of the same name is its own.
            let theirs = try await islet.request(.POST, "/v1/activities", key: other, body: start, headers: [("Idempotency-Key", "start-1")])
            #expect(theirs.status == 201 && theirs.json["id"] != first.json["id"])

            // A request without an API key is no one's: its route refuses it, whatever key it
            // gives (a key of that name was used above, for another request).
            for body in [start, "{}"] {
                let keyless = try await islet.request(.POST, "/v1/activities", key: nil, body: body, headers: [("Idempotency-Key", "start-1")])
                #expect(keyless.status == 401 && keyless.reason == "unauthorized")
            }

            // A refusal is kept too: the same request again is answered the same, not run.
            let refused = try await islet.request(.POST, "/v1/activities", key: key, body: "{}", headers: [("Idempotency-Key", "bad-1")])
            let refusedAgain = try await islet.request(.POST, "/v1/activities", key: key, body: "{}", headers: [("Idempotency-Key", "bad-1")])
            #expect(refused.status == 400 && refusedAgain.status == 400 && refusedAgain.headers["Idempotent-Replayed"].first == "true")

            let badKey = try await islet.request(.POST, "/v1/activities", key: key, body: start, headers: [("Idempotency-Key", "has space")])
            #expect(badKey.status == 400 && badKey.reason == "invalidRequest")
            // A read takes no key: it is not kept.
            let read = try await islet.request(.GET, "/v1/activities", key: key, headers: [("Idempotency-Key", "has space")])
            #expect(read.status == 200)
        }
    }

    @Test func aRetriedSendMakesOneSend() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.rides")
            let body = #"{"action":"end","key":"match-123","audience":"all","at":4102444800}"#
            let first = try await islet.request(.POST, "/v1/apps/com.example.rides/sends", key: key, body: body, headers: [("Idempotency-Key", "send-1")])
            let retry = try await islet.request(.POST, "/v1/apps/com.example.rides/sends", key: key, body: body, headers: [("Idempotency-Key", "send-1")])
            #expect(first.status == 202 && retry.status == 202 && retry.json["id"] == first.json["id"])
            let sends = try await islet.request(.GET, "/v1/apps/com.example.rides/sends", key: key)
            #expect(sends.json["sends"]?.arrayValue?.count == 1)
        }
    }
}
