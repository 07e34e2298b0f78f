import AsyncHTTPClient
import Foundation
import IsletCore
import IsletServer
import NIOCore
import Testing

/// docs/engine.md §9.1 on the APNs port: the same pushes, in order on one HTTP/2 connection, to
/// a server whose device pushes are served in their streams' pipelines (the default) and to one
/// whose every push takes its route (`server.hotRoutes: false`), are answered alike — status,
/// reason, header fields — change the activity alike, and leave the same lines in the endpoint's
/// request log.
@Suite("APNs hot push", .hangDetector)
struct APNsHotPushTests {
    @Test func aPushServedOnItsStreamIsAnsweredAndLoggedAsTheRouteDoes() async throws {
        var answers: [[String]] = []
        var logged: [[String]] = []
        var states: [String] = []
        for hot in [true, false] {
            let (seen, lines, state) = try await withIslet({ $0.server.hotRoutes = hot }) { islet in
                try await islet.withProvider { provider in
                    let activity = try await provider.startWithToken()
                    let token = try #require(activity.pushToken)
                    let jwt = try await provider.jwt()
                    let http = try islet.apnsHTTPClient()
                    return try await http.shuttingDown { http in
                        func push(
                            _ payload: String, to target: String? = nil, topic: String? = "", extra: [(String, String)] = []
                        ) async throws -> String {
                            var request = HTTPClientRequest(url: "https://localhost:\(islet.apnsPort!)/3/device/\(target ?? token)")
                            request.method = .POST
                            request.headers.add(name: "authorization", value: "bearer \(jwt)")
                            if let topic { request.headers.add(name: "apns-topic", value: (topic.isEmpty ? provider.bundleId : topic) + ".push-type.liveactivity") }
                            request.headers.add(name: "apns-push-type", value: "liveactivity")
                            for (name, value) in extra { request.headers.add(name: name, value: value) }
                            request.body = .bytes(ByteBuffer(string: payload))
                            let response = try await http.execute(request, timeout: .seconds(30))
                            let body = String(buffer: try await response.body.collect(upTo: 1 << 20))
                            let names = response.headers.map { $0.name.lowercased() }.sorted().joined(separator: ",")
                            // A 200's apns-unique-id is new each time, and a refusal's apns-id when none was sent.
                            return "\(response.status.code) \(names) \(body)"
                        }
                        let id = "123e4567-e89b-12d3-a456-4266554400a0"
                        var seen: [String] = []
                        // The first verifies the provider token (the route's); the rest find it remembered.
                        seen.append(try await push(Provider.update(#"{"step":2}"#, timestamp: t0Seconds + 10)))
                        seen.append(try await push(Provider.update(#"{"step":3}"#, timestamp: t0Seconds + 20), extra: [("apns-id", id)]))
                        // Older than the last: dropped on the device, a 200 all the same (the app is not strict).
                        seen.append(try await push(Provider.update(#"{"step":1}"#, timestamp: t0Seconds + 5)))
                        seen.append(try await push(Provider.update(#"{"step":4}"#), to: "xyz", extra: [("apns-id", id)]))
                        seen.append(try await push(Provider.update(#"{"step":4}"#), to: String(repeating: "0", count: 64), extra: [("apns-id", id)]))
                        seen.append(try await push(Provider.update(#"{"step":4}"#), topic: "com.example.other", extra: [("apns-id", id)]))
                        seen.append(try await push(Provider.update(#"{"step":4}"#), topic: nil, extra: [("apns-id", id)]))
                        seen.append(try await push(String(repeating: " ", count: 5_000), extra: [("apns-id", id)]))
                        seen.append(try await push("not json", extra: [("apns-id", id)]))
                        seen.append(try await push(
                            #"{"aps":{"event":"end","timestamp":\#(t0Seconds + 30),"content-state":{"step":5}}}"#, extra: [("apns-id", id)]
                        ))
                        let reply = try await islet.request(.GET, "/v1/apns/requests", key: islet.admin)
                        // Oldest first; what differs between two runs (times, ids made up) left out.
                        let lines = (reply.json["requests"]?.arrayValue ?? []).reversed().map { entry in
                            ["method", "path", "bundleId", "payloadBytes", "status", "reason", "detail", "outcomes", "reached"]
                                .map { "\($0)=\(entry[$0].map { try! WireFormat.string($0) } ?? "-")" }.joined(separator: " ")
                                + " headers=" + (entry["headers"]?.objectValue?.keys.sorted().joined(separator: ",") ?? "-")
                        }
                        let final = try await islet.isletClient(key: provider.apiKey).activity(activity.id)
                        return (seen, lines.map { $0.replacingOccurrences(of: token, with: "<token>").replacingOccurrences(of: activity.id, with: "<activity>") }, "\(final.state) \(final.content.state)")
                    }
                }
            }
            answers.append(seen.map { $0.replacingOccurrences(of: #"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"#, with: "<uuid>", options: .regularExpression) })
            logged.append(lines)
            states.append(state)
        }
        #expect(answers[0] == answers[1], "hot: \(answers[0])\nroute: \(answers[1])")
        #expect(answers[0].map { $0.prefix(3) } == ["200", "200", "200", "400", "400", "400", "400", "413", "400", "200"], "\(answers[0])")
        #expect(logged[0] == logged[1], "hot: \(logged[0])\nroute: \(logged[1])")
        #expect(logged[0].count == 10, "\(logged[0])")
        #expect(states[0] == states[1] && states[0].hasPrefix("ended"), "\(states)")
    }

    /// A payload over Apple's limit is refused once it passes the limit, hot or not: the rest of
    /// a body that does not end is not waited for.
    @Test(arguments: [true, false]) func aPayloadOverTheLimitIsRefusedBeforeItsEnd(hot: Bool) async throws {
        try await withIslet({ $0.server.hotRoutes = hot }) { islet in
            try await islet.withProvider { provider in
                let token = try #require(try await provider.startWithToken().pushToken)
                // The provider token verified and remembered first, so the next push may be served hot.
                let jwt = try await provider.jwt()
                #expect(try await provider.push(token, Provider.update(#"{"step":2}"#, timestamp: t0Seconds + 10), jwt: jwt).status == 200)
                let (body, more) = AsyncStream.makeStream(of: ByteBuffer.self)
                var request = HTTPClientRequest(url: "https://localhost:\(islet.apnsPort!)/3/device/\(token)")
                request.method = .POST
                request.headers.add(name: "authorization", value: "bearer \(jwt)")
                request.headers.add(name: "apns-topic", value: provider.bundleId + ".push-type.liveactivity")
                request.headers.add(name: "apns-push-type", value: "liveactivity")
                request.body = .stream(body, length: .unknown)
                more.yield(ByteBuffer(string: String(repeating: " ", count: 5_000)))
                let http = try islet.apnsHTTPClient()
                let status = try await http.shuttingDown { http in
                    let response = try await http.execute(request, timeout: .seconds(60))
                    more.finish()
                    return response.status.code
                }
                #expect(status == 413)
            }
        }
    }
}
