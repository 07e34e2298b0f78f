import Foundation
import IsletClient
import IsletCore
import IsletTestSupport
import Testing

extension DurabilityTests {
    /// docs/engine.md §9.1's spike (`ISLET_SPIKE_PIPELINE_UPDATE=1`): the same requests to a server
    /// with the hot route and to one without are answered alike, in order on one connection —
    /// updates served on the loop, a request pipelined behind one, a refusal, what the hot route
    /// passes to the route (an `Idempotency-Key`, a prefix of an id) — and the changes are kept.
    @Test func theHotRouteAnswersAsTheRouteDoesInOrder() async throws {
        try await withHTTPClient { http in
            var answers: [[String]] = []
            for environment in [["ISLET_SPIKE_PIPELINE_UPDATE": "1"], [:]] {
                let data = DataDirectory()
                let server = try await ServerProcess(data: data, environment: environment)
                let app = try await IsletClient(server: server.url, key: data.adminKey, http: http).createApp(bundleId: "com.example.hot")
                let client = IsletClient(server: server.url, key: app.apiKey, http: http)
                let id = try await client.start(ActivityRequest(attributesType: "T", attributes: [:], content: ActivityContent(state: ["n": 0]))).id
                let second = try await client.start(ActivityRequest(attributesType: "T", attributes: [:], content: ActivityContent(state: ["n": 0]))).id
                // The key is known to the server once it has been used (the hot route reads no key).
                func update(_ path: String, _ body: String, _ extra: String = "") -> String {
                    "POST \(path) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(app.apiKey)\r\nContent-Type: application/json\r\n\(extra)Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
                }
                let socket = try RawSocket(port: server.port)
                socket.send(Array((
                    update("/v1/activities/\(id)/update", #"{"content": {"state": {"n": 1}}}"#)
                        + "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
                        + update("/v1/activities/\(id)/update", #"{"content": {"state": {"n": 2}}, "bogus": 1}"#)
                        + update("/v1/activities/\(id)/update", #"{"content": {"state": {"n": 3}}}"#, "Idempotency-Key: k-1\r\n")
                        + update("/v1/activities/\(id.prefix(8))/update", #"{"content": {"state": {"n": 4}}}"#)
                        + update("/v1/activities/00000000-0000-0000-0000-000000000000/update", #"{"content": {"state": {"n": 5}}}"#)
                        + update("/v1/activities/\(id)/end", #"{"content": {"state": {"n": 6}}}"#)
                        + update("/v1/activities/\(id)/update", #"{"content": {"state": {"n": 7}}}"#)
                        + update("/v1/activities/\(second)/end", "", "Connection: close\r\n")
                ).utf8))
                let reply = await offThePool { socket.readAll(seconds: 30) }
                // Each answer's status line (a body ends with a newline, the next answer follows it).
                let statuses = reply.components(separatedBy: "HTTP/1.1 ").dropFirst().map { "HTTP/1.1 " + $0.components(separatedBy: "\r\n")[0] }
                // And the names of its header fields, the same both ways (a Date, a Server, …).
                let fields = reply.components(separatedBy: "HTTP/1.1 ").dropFirst().map { answer in
                    answer.components(separatedBy: "\r\n\r\n")[0].components(separatedBy: "\r\n").dropFirst()
                        .map { String($0.prefix { $0 != ":" }).lowercased() }.sorted().joined(separator: ",")
                }
                let reasons = reply.components(separatedBy: "\"reason\":\"").dropFirst().map { String($0.prefix { $0 != "\"" }) }
                answers.append(statuses + reasons + fields)
                let ended = try await client.activity(id)
                #expect(ended.content.state == ["n": 6] && ended.state == .ended, "\(environment): the end is kept, and the update after it ignored")
                #expect(try await client.activity(second).state == .ended, "\(environment): an end with no body ends it as it is")
                await server.stop(signal: SIGTERM)
            }
            #expect(answers[0] == answers[1], "with the hot route: \(answers[0]); without: \(answers[1])")
            #expect(answers[0].prefix(9) == [
                "HTTP/1.1 200 OK", "HTTP/1.1 200 OK", "HTTP/1.1 400 Bad Request", "HTTP/1.1 200 OK", "HTTP/1.1 200 OK", "HTTP/1.1 404 Not Found",
                "HTTP/1.1 200 OK", "HTTP/1.1 409 Conflict", "HTTP/1.1 200 OK",
            ])
        }
    }
}
