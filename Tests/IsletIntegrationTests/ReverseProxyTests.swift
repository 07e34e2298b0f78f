import AsyncHTTPClient
import Foundation
import IsletClient
import IsletCore
import IsletTestSupport
import NIOCore
import Testing

/// A loopback server behind a real nginx on the same machine (docs/security.md, "Behind a
/// reverse proxy"): every client's request reaches Islet from loopback, with a loopback `Host`,
/// so only what the proxy says about it — a forwarding header, or HTTP/1.0 — keeps another
/// machine's request from the keyless console's and display's rights.
@Suite("Behind a reverse proxy", .enabled(if: NginxServer.available), .serialized, .hangDetector)
struct ReverseProxyTests {
    /// nginx as its documentation's smallest example has it, and as most guides have it.
    static let proxies: [(name: String, location: @Sendable (Int) -> String)] = [
        ("nginx's plain proxy_pass (HTTP/1.0, no forwarding header)", { "proxy_pass http://127.0.0.1:\($0);" }),
        ("nginx with X-Forwarded-For", { port in
            """
            proxy_pass http://127.0.0.1:\(port);
            proxy_http_version 1.1;
            proxy_set_header Host $host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
            """
        }),
        ("nginx with X-Real-IP", { port in
            """
            proxy_pass http://127.0.0.1:\(port);
            proxy_http_version 1.1;
            proxy_set_header X-Real-IP $remote_addr;
            """
        }),
    ]

    @Test func aRequestThroughTheProxyGetsNoKeylessRights() async throws {
        try await withHTTPClient { http in
            let served = try await ServedApp("com.example.ci", http: http)
            let activity = try await served.client.start(ActivityRequest(
                attributesType: "BuildAttributes", attributes: ["buildId": "27"], content: ActivityContent(state: ["status": "running"])
            ))
            // This machine's own keyless console: allowed, as before.
            #expect(try await status(http, "GET", "http://127.0.0.1:\(served.server.port)/v1/apps") == 200)
            for proxy in Self.proxies {
                let nginx = try await NginxServer(location: proxy.location(served.server.port))
                defer { nginx.stop() }
                let base = "http://127.0.0.1:\(nginx.port)"
                for (method, path) in [("GET", "/v1/apps"), ("GET", "/v1/activities/\(activity.id)"), ("GET", "/v1/devices/default/display"),
                    ("GET", "/v1/overview"), ("POST", "/v1/activities/\(activity.id)/end"), ("POST", "/v1/activities/\(activity.id)/dismiss"),
                    ("GET", "/v1/apps/com.example.ci/sends"), ("DELETE", "/v1/apps/com.example.ci/sends/snd_0123456789ab0123456789ab"),
                    ("GET", "/v1/apps/com.example.ci/webhooks")]
                {
                    let answer = try await status(http, method, base + path)
                    #expect(answer == 403, "\(proxy.name): \(method) \(path) answered \(answer)")
                }
                // The pages load; what they read needs a key. With one, the proxy is no matter.
                #expect(try await status(http, "GET", base + "/console") == 200, "\(proxy.name)")
                #expect(try await status(http, "GET", base + "/v1/activities/\(activity.id)", key: served.app.apiKey) == 200, "\(proxy.name)")
            }
            #expect(try await served.client.activity(activity.id).state == .active)
            #expect(await served.server.stop(signal: SIGTERM) == 0)
        }
    }

    /// A backend behind each proxy: its user and its send pass through, and the send retried
    /// with its `Idempotency-Key` (a lost answer) gets the first answer again, made once.
    @Test func aSendThroughTheProxyIsMadeOnceUnderItsIdempotencyKey() async throws {
        try await withHTTPClient { http in
            let served = try await ServedApp("com.example.ci", http: http)
            for (index, proxy) in Self.proxies.enumerated() {
                let nginx = try await NginxServer(location: proxy.location(served.server.port))
                defer { nginx.stop() }
                let base = "http://127.0.0.1:\(nginx.port)/v1/apps/com.example.ci"
                let user = try await call(http, "PUT", base + "/users/u-\(index)", key: served.app.apiKey, body: #"{"devices": ["default"], "tags": {"match": "123"}}"#)
                #expect(user.status == 201, "\(proxy.name): \(user.body)")
                let send = #"{"action": "start", "key": "match-\#(index)", "audience": {"users": ["u-\#(index)"]}, "attributesType": "MatchAttributes", "content": {"state": {"score": "0-0"}}, "at": 4102444800}"#
                let first = try await call(http, "POST", base + "/sends", key: served.app.apiKey, body: send, idempotencyKey: "kick-off-\(index)")
                let again = try await call(http, "POST", base + "/sends", key: served.app.apiKey, body: send, idempotencyKey: "kick-off-\(index)")
                #expect(first.status == 202 && again.status == 202, "\(proxy.name): \(first.status) \(again.status) \(again.body)")
                #expect(again.body == first.body && again.replayed && !first.replayed, "\(proxy.name)")
            }
            #expect(try await served.client.sends(bundleId: "com.example.ci").count == Self.proxies.count)
            #expect(await served.server.stop(signal: SIGTERM) == 0)
        }
    }

    private func call(
        _ http: HTTPClient, _ method: String, _ url: String, key: String, body: String, idempotencyKey: String? = nil
    ) async throws -> (status: Int, body: String, replayed: Bool) {
        var request = HTTPClientRequest(url: url)
        request.method = .init(rawValue: method)
        request.headers.add(name: "Authorization", value: "Bearer \(key)")
        request.headers.add(name: "Content-Type", value: "application/json")
        if let idempotencyKey { request.headers.add(name: "Idempotency-Key", value: idempotencyKey) }
        request.body = .bytes(ByteBuffer(string: body))
        let response = try await http.execute(request, timeout: .seconds(10))
        let text = String(buffer: try await response.body.collect(upTo: 1 << 20))
        return (Int(response.status.code), text, response.headers.first(name: "Idempotent-Replayed") == "true")
    }

    /// A proxy that says nothing (HTTP/1.1, no forwarding header) cannot be told from a browser
    /// on this machine: `server.keylessLoopback: false` is the setting for it.
    @Test func keylessLoopbackOffClosesAProxyThatSaysNothing() async throws {
        try await withHTTPClient { http in
            let data = DataDirectory()
            let server = try await ServerProcess(data: data, environment: ["ISLET_SERVER_KEYLESS_LOOPBACK": "false"])
            let nginx = try await NginxServer(location: "proxy_pass http://127.0.0.1:\(server.port); proxy_http_version 1.1;")
            defer { nginx.stop() }
            let base = "http://127.0.0.1:\(nginx.port)"
            #expect(try await status(http, "GET", base + "/v1/apps") == 401)
            #expect(try await status(http, "GET", base + "/v1/devices/default/display") == 401)
            #expect(try await status(http, "GET", "http://127.0.0.1:\(server.port)/v1/apps") == 401)
            #expect(try await status(http, "GET", base + "/v1/apps", key: data.adminKey) == 200)
            #expect(await server.stop(signal: SIGTERM) == 0)
        }
    }

    /// One request, as a client that is not a browser sends it (no `Origin`); a write is JSON,
    /// as the keyless console's are.
    private func status(_ http: HTTPClient, _ method: String, _ url: String, key: String? = nil) async throws -> Int {
        var request = HTTPClientRequest(url: url)
        request.method = .init(rawValue: method)
        if let key { request.headers.add(name: "Authorization", value: "Bearer \(key)") }
        if method != "GET" {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: "{}"))
        }
        let response = try await http.execute(request, timeout: .seconds(10))
        _ = try await response.body.collect(upTo: 1 << 20)
        return Int(response.status.code)
    }
}
