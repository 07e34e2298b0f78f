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
                let (data, server, _, app, display) = try await Self.serverWithAnApp(environment, http: http)
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
                answers.append(Self.shape(of: reply))
                let ended = try await client.activity(id)
                #expect(ended.content.state == ["n": 6] && ended.state == .ended, "\(environment): the end is kept, and the update after it ignored")
                let other = try await client.activity(second)
                #expect(other.content.state == ["n": 8] && other.state == .ended, "\(environment): the admin's update is kept; an end with no body ends it as it is")
                // Hummingbird's counters for the two routes, by status (the durations' counts too).
                counted.append(try await Self.counted("/v1/activities/{id}/", on: server, http: http))
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

    /// The same for `PUT /v1/activities/{id}/push-token`: a phone's update token registered on
    /// the loop with an app's key and the admin's, the same token again, refusals (a token that is
    /// not one, a body without its device, another device, no such activity), and what the hot
    /// route passes on (a display's key, an `Idempotency-Key`) — answered alike, the last token
    /// kept, and counted alike under the route's labels.
    @Test func theHotPushTokenRouteAnswersAsTheRouteDoes() async throws {
        try await withHTTPClient { http in
            var answers: [[String]] = []
            var counted: [[String]] = []
            for environment in [[:], ["ISLET_SERVER_HOT_ROUTES": "false"]] {
                let (data, server, admin, app, display) = try await Self.serverWithAnApp(environment, http: http)
                _ = try await admin.createDevice(id: "hot-phone")
                let client = IsletClient(server: server.url, key: app.apiKey, http: http)
                _ = try await client.registerPushToStartToken(String(repeating: "ab", count: 32), environment: .development, device: "hot-phone", attributesType: "T")
                let id = try await client.start(ActivityRequest(
                    attributesType: "T", attributes: [:], content: ActivityContent(state: ["n": 0]), deviceId: "hot-phone", source: .phone
                )).id
                func put(_ path: String, _ body: String, _ extra: String = "", key: String = app.apiKey) -> String {
                    "PUT \(path) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(key)\r\nContent-Type: application/json\r\n\(extra)Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
                }
                func token(_ digit: String) -> String { #"{"token": "\#(String(repeating: digit, count: 64))", "device": "hot-phone"}"# }
                let path = "/v1/activities/\(id)/push-token"
                let socket = try RawSocket(port: server.port)
                socket.send(Array((
                    put(path, token("1"))
                        + put(path, token("1"))
                        + put(path, #"{"token": "not-hex", "device": "hot-phone"}"#)
                        + put(path, #"{"token": "\#(String(repeating: "2", count: 64))"}"#)
                        + put(path, #"{"token": "\#(String(repeating: "2", count: 64))", "device": "hot-display"}"#)
                        + put("/v1/activities/00000000-0000-0000-0000-000000000000/push-token", token("2"))
                        + put(path, token("3"), key: data.adminKey)
                        + put(path, token("4"), key: display)
                        + put(path, token("5"), "Idempotency-Key: t-1\r\n")
                        + put(path, token("6"), "Connection: close\r\n")
                ).utf8))
                let reply = await offThePool { socket.readAll(seconds: 30) }
                // And the tokens answered, each as the route writes it (their times differ between the servers).
                answers.append(Self.shape(of: reply) + Self.values(of: "kind", in: reply))
                let phone = try await admin.phone("hot-phone")
                let current = phone.tokens.filter { $0.activityId == id && $0.retiredAt == nil }.map(\.token)
                #expect(current == [String(repeating: "6", count: 64)], "\(environment): \(phone.tokens)")
                counted.append(try await Self.counted("/v1/activities/{id}/push-token", on: server, http: http))
                await server.stop(signal: SIGTERM)
            }
            #expect(answers[0] == answers[1], "with the hot routes: \(answers[0]); without: \(answers[1])")
            #expect(answers[0].prefix(10) == [
                "HTTP/1.1 200 OK", "HTTP/1.1 200 OK", "HTTP/1.1 400 Bad Request", "HTTP/1.1 400 Bad Request", "HTTP/1.1 400 Bad Request",
                "HTTP/1.1 404 Not Found", "HTTP/1.1 200 OK", "HTTP/1.1 403 Forbidden", "HTTP/1.1 200 OK", "HTTP/1.1 200 OK",
            ])
            #expect(counted[0] == counted[1], "with the hot routes: \(counted[0]); without: \(counted[1])")
            #expect(counted[0].contains { $0.hasPrefix("hb_requests_total") && $0.contains(#"http_request_method="PUT""#) }, "\(counted[0])")
        }
    }

    /// Pipelined answers as the two servers are compared: each status line (a body ends with a
    /// newline, the next answer follows it), each refusal's reason, and the names of each
    /// answer's header fields (a Date, a Server, …).
    private static func shape(of reply: String) -> [String] {
        let answers = reply.components(separatedBy: "HTTP/1.1 ").dropFirst()
        let statuses = answers.map { "HTTP/1.1 " + $0.components(separatedBy: "\r\n")[0] }
        let fields = answers.map { answer in
            answer.components(separatedBy: "\r\n\r\n")[0].components(separatedBy: "\r\n").dropFirst()
                .map { String($0.prefix { $0 != ":" }).lowercased() }.sorted().joined(separator: ",")
        }
        return statuses + values(of: "reason", in: reply) + fields
    }

    /// Every string value of `member` in `reply`, in order.
    private static func values(of member: String, in reply: String) -> [String] {
        reply.components(separatedBy: "\"\(member)\":\"").dropFirst().map { String($0.prefix { $0 != "\"" }) }
    }

    /// Hummingbird's request counters and durations' counts for the routes whose label holds `route`.
    private static func counted(_ route: String, on server: ServerProcess, http: HTTPClient) async throws -> [String] {
        let metrics = try await http.execute(HTTPClientRequest(url: server.url + "/metrics"), timeout: .seconds(30))
        let exposition = String(buffer: try await metrics.body.collect(upTo: 16 << 20))
        return exposition.split(separator: "\n").map(String.init).filter { line in
            line.contains(route) && !line.hasPrefix("#")
                && (line.hasPrefix("hb_request") || line.hasPrefix("http_server_request_duration_seconds_count"))
        }.sorted()
    }

    /// A server started with `environment`, its admin's client, an app, and a display's key.
    private static func serverWithAnApp(
        _ environment: [String: String], http: HTTPClient
    ) async throws -> (DataDirectory, ServerProcess, IsletClient, CreatedApp, String) {
        let data = DataDirectory()
        let server = try await ServerProcess(data: data, environment: environment)
        let admin = IsletClient(server: server.url, key: data.adminKey, http: http)
        let app = try await admin.createApp(bundleId: "com.example.hot")
        _ = try await admin.createDevice(id: "hot-display")
        return (data, server, admin, app, try await admin.issueDeviceKey(device: "hot-display").key)
    }
}
