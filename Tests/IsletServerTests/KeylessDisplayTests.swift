import Foundation
import HTTPTypes
import IsletCore
import IsletServer
import IsletTestSupport
import Testing

/// The keyless display on a loopback server answers only what no other web page can send
/// (docs/security.md): a loopback `Host`, its own `Origin` or none, and JSON writes.
@Suite("Keyless display", .hangDetector)
struct KeylessDisplayTests {
    /// One raw HTTP/1.1 exchange, with exactly the headers given (no client adds any).
    private func raw(
        _ islet: Harness, _ method: String, _ path: String, host: String? = nil, headers: [String] = [], body: String? = nil,
        version: String = "HTTP/1.1"
    ) async throws -> (status: Int, text: String) {
        var head = "\(method) \(path) \(version)\r\nHost: \(host ?? "127.0.0.1:\(islet.port)")\r\nConnection: close\r\n"
        for header in headers { head += header + "\r\n" }
        if let body { head += "Content-Length: \(body.utf8.count)\r\n" }
        let answer = try await RawHTTP.exchange(port: islet.port, bytes: Array((head + "\r\n" + (body ?? "")).utf8))
        let status = answer.split(separator: " ", maxSplits: 2).dropFirst().first.flatMap { Int($0) } ?? 0
        return (status, answer)
    }

    /// A WebSocket handshake with exactly these headers; the close frame the server ends it with.
    private func webSocketClose(
        _ islet: Harness, query: String, host: String? = nil, origin: String? = nil, forwarded: String? = nil
    ) async throws -> (code: Int, reason: String)? {
        var head = "GET /v1/events/ws?\(query) HTTP/1.1\r\nHost: \(host ?? "127.0.0.1:\(islet.port)")\r\n"
        head += "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        if let origin { head += "Origin: \(origin)\r\n" }
        if let forwarded { head += forwarded + "\r\n" }
        let socket = try RawSocket(port: islet.port)
        socket.send(Array((head + "\r\n").utf8))
        let answer = Array(await offThePool { socket.readAllBytes(seconds: 20) })
        // After the 101's head: one unmasked close frame, 0x88, its length, the code, the reason.
        guard let end = answer.firstRange(of: Array("\r\n\r\n".utf8))?.upperBound, answer.count >= end + 4,
            answer[end] == 0x88
        else { return nil }
        let length = Int(answer[end + 1] & 0x7F)
        let code = Int(answer[end + 2]) << 8 | Int(answer[end + 3])
        let reason = String(decoding: answer[(end + 4)..<min(answer.count, end + 2 + length)], as: UTF8.self)
        return (code, reason)
    }

    @Test func onlyLoopbackNamesReachTheDisplayWithoutAKey() async throws {
        try await withIslet { islet in
            for host in ["127.0.0.1:\(islet.port)", "localhost:\(islet.port)", "LOCALHOST", "127.0.0.2:\(islet.port)", "app.localhost:\(islet.port)"] {
                #expect(try await raw(islet, "GET", "/v1/devices/default/display", host: host).status == 200, "\(host)")
            }
            // DNS rebinding: a page on evil.example, resolved to 127.0.0.1, is same-origin with itself.
            for host in ["evil.example:\(islet.port)", "127.0.0.1.evil.example", "localhost.evil.example", "127.0.0.1:80@evil.example", "[::2]"] {
                let answer = try await raw(islet, "GET", "/v1/devices/default/display", host: host)
                #expect(answer.status == 403, "\(host)")
                #expect(answer.text.contains("forbidden"), "\(host)")
            }
            let settings = try await raw(islet, "PUT", "/v1/devices/default/settings", host: "evil.example:\(islet.port)",
                                         headers: ["Content-Type: application/json"], body: #"{"bundleId":"com.example.x","activitiesEnabled":false}"#)
            #expect(settings.status == 403)
            // With a key, the Host does not matter: a key is the proof.
            let keyed = try await raw(islet, "GET", "/v1/devices/default/display", host: "evil.example", headers: ["Authorization: Bearer \(islet.admin)"])
            #expect(keyed.status == 200)
        }
    }

    @Test func anotherOriginIsRefusedWithoutAKey() async throws {
        try await withIslet { islet in
            let own = "Origin: http://127.0.0.1:\(islet.port)"
            #expect(try await raw(islet, "GET", "/v1/devices/default/display", headers: [own]).status == 200)
            for origin in ["http://127.0.0.1:\(islet.port + 1)", "http://evil.example", "null", "http://localhost:\(islet.port)", "file://"] {
                #expect(try await raw(islet, "GET", "/v1/devices/default/display", headers: ["Origin: \(origin)"]).status == 403, "\(origin)")
            }
            // WebSocket handshakes carry Origin and no CORS protects them: the server checks it.
            let foreign = try await webSocketClose(islet, query: "device=default&since=0", origin: "http://127.0.0.1:1")
            #expect(foreign?.code == 4403)
            #expect(foreign?.reason.contains("own origin (http://127.0.0.1:\(islet.port))") == true, "\(foreign?.reason ?? "")")
            let rebound = try await webSocketClose(islet, query: "device=default&since=0", host: "evil.example:\(islet.port)")
            #expect(rebound?.code == 4403)
            // Its own origin is let in, to be refused only for the malformed id it then sends.
            let ownOrigin = try await webSocketClose(islet, query: "device=default&since=x", origin: "http://127.0.0.1:\(islet.port)")
            #expect(ownOrigin?.code == 4400)
        }
    }

    @Test func keylessWritesMustBeJSON() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.bike")
            let activity = try await islet.start(key: key)
            for type in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ";application/json", nil] {
                let dismissal = try await raw(islet, "POST", "/v1/activities/\(activity.id)/dismiss",
                                              headers: type.map { ["Content-Type: \($0)"] } ?? [], body: "{}")
                #expect(dismissal.status == 403, "\(type ?? "no type")")
                let settings = try await raw(islet, "PUT", "/v1/devices/default/settings", headers: type.map { ["Content-Type: \($0)"] } ?? [],
                                             body: #"{"bundleId":"com.example.bike","activitiesEnabled":false}"#)
                #expect(settings.status == 403, "\(type ?? "no type")")
            }
            #expect(try await islet.request(.GET, "/v1/activities/\(activity.id)", key: key).json["activityState"] == "active")
            let dismissal = try await raw(islet, "POST", "/v1/activities/\(activity.id)/dismiss",
                                          headers: ["Content-Type: application/json; charset=utf-8"], body: "{}")
            #expect(dismissal.status == 200)
        }
    }

    @Test func readersWithoutAKeySeeNoPushTokens() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.bike")
            let activity = try await islet.start(key: key, extra: #","pushType":"token""#)
            let token = try #require(activity.pushToken)
            _ = try await islet.request(.GET, "/v1/devices/default/settings?bundleId=com.example.bike", key: key)
            let withKey = try await islet.request(.GET, "/v1/devices/default/settings", key: islet.admin)
            #expect(withKey.text.contains("pushToStartToken"))

            let settings = try await islet.request(.GET, "/v1/devices/default/settings")
            #expect(settings.status == 200)
            #expect(!settings.text.contains("pushToStartToken"))
            let stream = try await SSE.read(islet, key: nil, path: "/v1/events?device=default&since=0", until: "\"started\"")
            #expect(stream.text.contains(activity.id))
            #expect(!stream.text.contains(token))
            #expect(!stream.text.contains("pushTokenUpdated"))
            let keyed = try await SSE.read(islet, key: islet.admin, path: "/v1/events?device=default&since=0", until: "pushTokenUpdated")
            #expect(keyed.text.contains(token))
            let dismissal = try await islet.request(.POST, "/v1/activities/\(activity.id)/dismiss", body: "{}")
            #expect(dismissal.status == 200)
            #expect(!dismissal.text.contains(token))
        }
    }

    @Test func readersWithoutAKeySeeNoChannelIds() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.bike")
            let created = try await islet.request(.POST, "/v1/apps/com.example.bike/channels", key: key, body: #"{"storagePolicy":0}"#)
            let channel = try #require(created.json["id"]?.stringValue)
            let activity = try await islet.start(key: key, extra: #","pushType":{"channel":"\#(channel)"}"#)

            let stream = try await SSE.read(islet, key: nil, path: "/v1/events?device=default&since=0", until: "\"started\"")
            #expect(stream.text.contains(activity.id))
            #expect(!stream.text.contains(channel))
            let keyed = try await SSE.read(islet, key: key, path: "/v1/events?device=default&since=0", until: "\"started\"")
            #expect(keyed.text.contains(channel))
            let dismissal = try await islet.request(.POST, "/v1/activities/\(activity.id)/dismiss", body: "{}")
            #expect(dismissal.status == 200)
            #expect(!dismissal.text.contains(channel))
            #expect(dismissal.json["pushType"] == nil)
        }
    }

    @Test func thePagesForbidFramingAndForeignScripts() async throws {
        try await withIslet { islet in
            let page = try await islet.request(.GET, "/")
            let policy = try #require(page.headers["Content-Security-Policy"].first)
            #expect(policy.contains("frame-ancestors 'none'"))
            #expect(policy.contains("script-src 'self'"))
            #expect(page.headers["X-Frame-Options"].first == "DENY")
            #expect(page.headers["X-Content-Type-Options"].first == "nosniff")
            let script = try await islet.request(.GET, "/display/display.js")
            #expect(script.headers["X-Content-Type-Options"].first == "nosniff")
        }
    }

    @Test func onlyALoopbackAddressMakesTheServerKeyless() {
        for host in ["127.0.0.1", "127.1.2.3", "localhost", "::1", "[::1]"] {
            var server = ServerSettings()
            server.host = host
            #expect(server.listensOnLoopbackOnly, "\(host)")
        }
        for host in ["0.0.0.0", "::", "127.example.net", "127.0.0.1.nip.io", "localhost.example", "192.168.1.2", "1270.0.0.1"] {
            var server = ServerSettings()
            server.host = host
            #expect(!server.listensOnLoopbackOnly, "\(host)")
        }
    }

    /// A reverse proxy on this machine makes every client's request arrive from loopback with a
    /// loopback `Host` (nginx's plain `proxy_pass http://127.0.0.1:8080`): with what the proxy
    /// adds, a request without a key listed every app, read any activity and the display, and
    /// ended an activity. Now a request that says it was forwarded needs a key.
    @Test func aRequestThatCameThroughAProxyNeedsAKey() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.bike")
            let activity = try await islet.start(key: key)
            for header in ["X-Forwarded-For: 203.0.113.7", "Forwarded: for=203.0.113.7;proto=https", "X-Real-IP: 203.0.113.7",
                "X-Forwarded-Host: islet.example.com", "X-Forwarded-Proto: https", "Via: 1.1 proxy", "True-Client-IP: 203.0.113.7",
                "x-forwarded-for: 127.0.0.1"]
            {
                for (method, path, body) in [("GET", "/v1/apps", nil), ("GET", "/v1/activities/\(activity.id)", nil),
                    ("GET", "/v1/devices/default/display", nil), ("POST", "/v1/activities/\(activity.id)/end", "{}"),
                    ("POST", "/v1/activities/\(activity.id)/dismiss", "{}"), ("GET", "/v1/overview", nil)] as [(String, String, String?)]
                {
                    let answer = try await raw(islet, method, path, headers: [header, "Content-Type: application/json"], body: body)
                    #expect(answer.status == 403, "\(header): \(method) \(path): \(answer.text.prefix(300))")
                    #expect(answer.text.contains("came through a proxy"), "\(header): \(method) \(path)")
                }
                let stream = try await webSocketClose(islet, query: "device=default", forwarded: header)
                #expect(stream?.code == 4403, "\(header): \(String(describing: stream))")
                // With a key, the proxy is no matter: the key is the proof.
                let keyed = try await raw(islet, "GET", "/v1/activities/\(activity.id)", headers: [header, "Authorization: Bearer \(key)"])
                #expect(keyed.status == 200, "\(header)")
            }
            let after = try await islet.request(.GET, "/v1/activities/\(activity.id)", key: key)
            #expect(after.json["activityState"] == "active", "\(after.text)")
        }
    }

    /// nginx speaks HTTP/1.0 to its upstreams unless told otherwise, and adds no forwarding header
    /// unless told to: its minimal configuration is told from a browser by the version.
    @Test func anHTTP10RequestNeedsAKey() async throws {
        try await withIslet { islet in
            let http10 = try await raw(islet, "GET", "/v1/devices/default/display", version: "HTTP/1.0")
            #expect(http10.status == 403, "\(http10.text.prefix(300))")
            #expect(http10.text.contains("HTTP/1.0"))
            // A client cannot pass for HTTP/1.1 by sending the field the server writes itself.
            let disguised = try await raw(islet, "GET", "/v1/apps", headers: ["Islet-Request-Version: HTTP/1.1"], version: "HTTP/1.0")
            #expect(disguised.status == 403)
            // Nor make an HTTP/1.1 request look older than it is.
            #expect(try await raw(islet, "GET", "/v1/devices/default/display", headers: ["Islet-Request-Version: HTTP/1.0"]).status == 200)
            let keyed = try await raw(islet, "GET", "/v1/apps", headers: ["Authorization: Bearer \(islet.admin)"], version: "HTTP/1.0")
            #expect(keyed.status == 200)
        }
    }

    /// `server.keylessLoopback: false`: behind a proxy that says nothing, a loopback server lets
    /// nothing in without a key — the display and the console ask for one.
    @Test func keylessLoopbackOffAsksEveryRequestForAKey() async throws {
        try await withIslet({ $0.server.keylessLoopback = false }) { islet in
            let display = try await raw(islet, "GET", "/v1/devices/default/display")
            #expect(display.status == 401, "\(display.text.prefix(300))")
            #expect(display.text.contains("server.keylessLoopback"))
            #expect(try await raw(islet, "GET", "/v1/apps").status == 401)
            #expect(try await webSocketClose(islet, query: "device=default")?.code == 4401)
            #expect(try await raw(islet, "GET", "/v1/apps", headers: ["Authorization: Bearer \(islet.admin)"]).status == 200)
            // The pages themselves are served; their data needs the key.
            #expect(try await raw(islet, "GET", "/console").status == 200)
        }
    }

    @Test func aKeyWithoutBearerIsRefused() async throws {
        try await withIslet { islet in
            let bare = try await islet.request(.GET, "/v1/apps", headers: [("Authorization", islet.admin)])
            #expect(bare.status == 401)
            #expect(bare.reason == "unauthorized")
            #expect(bare.json["error"]?["message"]?.stringValue?.contains("Bearer") == true)
            let basic = try await islet.request(.GET, "/v1/apps", headers: [("Authorization", "Basic YWRtaW46YWRtaW4=")])
            #expect(basic.status == 401)
            #expect(try await islet.request(.GET, "/v1/apps", headers: [("Authorization", "bearer \(islet.admin)")]).status == 200)
        }
    }
}
