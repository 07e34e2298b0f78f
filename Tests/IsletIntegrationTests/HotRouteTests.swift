import AsyncHTTPClient
import Foundation
import IsletClient
import IsletCore
import IsletTestSupport
import Testing

extension DurabilityTests {
    /// docs/engine.md §9.1: the same requests to a server with the hot routes (the default) and
    /// to one without (`server.hotRoutes: false`) are answered alike, in order on one connection —
    /// updates and ends served on the loop, with an app's key and the admin's, a request
    /// pipelined behind one, refusals, and what the hot route passes to the route (an
    /// `Idempotency-Key`, a prefix of an id, a device's key, a scheduled change) — the changes
    /// are kept, and `/metrics` counts them alike under the route's labels.
    @Test func theHotRouteAnswersAsTheRouteDoesInOrder() async throws {
        try await withHTTPClient { http in
            var answers: [[String]] = []
            var counted: [[String]] = []
            for environment in [[:], ["ISLET_SERVER_HOT_ROUTES": "false"]] {
                let data = DataDirectory()
                let server = try await ServerProcess(data: data, environment: environment)
                let admin = IsletClient(server: server.url, key: data.adminKey, http: http)
                let app = try await admin.createApp(bundleId: "com.example.hot")
                _ = try await admin.createDevice(id: "hot-display")
                let display = try await admin.issueDeviceKey(device: "hot-display").key
                let client = IsletClient(server: server.url, key: app.apiKey, http: http)
                let id = try await client.start(ActivityRequest(attributesType: "T", attributes: [:], content: ActivityContent(state: ["n": 0]))).id
                let second = try await client.start(ActivityRequest(attributesType: "T", attributes: [:], content: ActivityContent(state: ["n": 0]))).id
                // Each key is known to the server once it has been used (the hot route reads no key).
                func post(_ path: String, _ body: String, _ extra: String = "", key: String = app.apiKey) -> String {
                    "POST \(path) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(key)\r\nContent-Type: application/json\r\n\(extra)Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
                }
                let soon = Int(Date().timeIntervalSince1970) + 3600
                let socket = try RawSocket(port: server.port)
                socket.send(Array((
                    post("/v1/activities/\(id)/update", #"{"content": {"state": {"n": 1}}}"#)
                        + "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
                        + post("/v1/activities/\(id)/update", #"{"content": {"state": {"n": 2}}, "bogus": 1}"#)
                        + post("/v1/activities/\(id)/update", #"{"content": {"state": {"n": 3}}}"#, "Idempotency-Key: k-1\r\n")
                        + post("/v1/activities/\(id.prefix(8))/update", #"{"content": {"state": {"n": 4}}}"#)
                        + post("/v1/activities/00000000-0000-0000-0000-000000000000/update", #"{"content": {"state": {"n": 5}}}"#)
                        + post("/v1/activities/\(id)/end", #"{"content": {"state": {"n": 6}}}"#)
                        + post("/v1/activities/\(id)/update", #"{"content": {"state": {"n": 7}}}"#)
                        + post("/v1/activities/\(second)/update", #"{"content": {"state": {"n": 8}}}"#, key: data.adminKey)
                        + post("/v1/activities/\(second)/update", #"{"content": {"state": {"n": 9}}}"#, key: display)
                        + post("/v1/activities/\(second)/update", #"{"content": {"state": {"n": 10}}}"#, key: "islet_app_not-a-key")
                        + post("/v1/activities/\(second)/update", #"{"content": {"state": {"n": 11}}, "at": \#(soon)}"#)
                        + post("/v1/activities/\(second)/end", "", "Connection: close\r\n", key: data.adminKey)
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
                let other = try await client.activity(second)
                #expect(other.content.state == ["n": 8] && other.state == .ended, "\(environment): the admin's update is kept; an end with no body ends it as it is")
                // Hummingbird's counters for the two routes, by status (the durations' counts too).
                let metrics = try await http.execute(HTTPClientRequest(url: server.url + "/metrics"), timeout: .seconds(30))
                let exposition = String(buffer: try await metrics.body.collect(upTo: 16 << 20))
                counted.append(exposition.split(separator: "\n").map(String.init).filter { line in
                    line.contains("/v1/activities/{id}/") && !line.hasPrefix("#")
                        && (line.hasPrefix("hb_request") || line.hasPrefix("http_server_request_duration_seconds_count"))
                }.sorted())
                await server.stop(signal: SIGTERM)
            }
            #expect(answers[0] == answers[1], "with the hot routes: \(answers[0]); without: \(answers[1])")
            #expect(answers[0].prefix(13) == [
                "HTTP/1.1 200 OK", "HTTP/1.1 200 OK", "HTTP/1.1 400 Bad Request", "HTTP/1.1 200 OK", "HTTP/1.1 200 OK", "HTTP/1.1 404 Not Found",
                "HTTP/1.1 200 OK", "HTTP/1.1 409 Conflict", "HTTP/1.1 200 OK", "HTTP/1.1 403 Forbidden", "HTTP/1.1 401 Unauthorized",
                "HTTP/1.1 202 Accepted", "HTTP/1.1 200 OK",
            ])
            #expect(counted[0] == counted[1], "with the hot routes: \(counted[0]); without: \(counted[1])")
            #expect(counted[0].contains { $0.hasPrefix("hb_requests_total") && $0.contains(#"http_response_status_code="409""#) }, "\(counted[0])")
        }
    }
}
