import Foundation
import IsletCore
import IsletEngine
import IsletTestSupport
import Testing

/// A receiver that misbehaves by path, on a free loopback port: `/redirect` answers 302 to
/// `/ok`; `/slow` answers after 10 s; `/huge` answers 200 with 8 MB; `/never` reads the request
/// and never answers; `/trickle` sends its head at once and its 400-byte body a byte every
/// 50 ms; `/echo` answers 422 quoting the activity's push token and the request's body, as a
/// validation error does; `/ok` answers 200. Each request's path is written, as it arrives, to `log`.
private final class HostileReceiver: Sendable {
    let port: Int
    let log: URL
    private let process: ChildProcess

    static let script = #"""
        import http.server, sys, time
        log = sys.argv[1]
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True
            def do_POST(self):
                received = self.rfile.read(int(self.headers["Content-Length"]))
                with open(log, "a") as out:
                    out.write(self.path + "\n")
                if self.path == "/never":
                    time.sleep(3600)
                if self.path == "/slow":
                    time.sleep(10)
                if self.path == "/trickle":
                    self.send_response(200)
                    self.send_header("Content-Length", "400")
                    self.end_headers()
                    self.wfile.flush()
                    for _ in range(400):
                        self.wfile.write(b"x")
                        self.wfile.flush()
                        time.sleep(0.05)
                    return
                if self.path == "/echo":
                    import json
                    token = (json.loads(received).get("data", {}).get("activity") or {}).get("pushToken") or ""
                    body = json.dumps({"error": "unknown device token " + token, "received": json.loads(received)}).encode()
                    self.send_response(422)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                if self.path == "/redirect":
                    self.send_response(302)
                    self.send_header("Location", "/ok")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = b"x" * (8 << 20) if self.path == "/huge" else b"ok"
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            def log_message(self, *args):
                pass
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        print(server.server_address[1], flush=True)
        server.serve_forever()
        """#

    private init(port: Int, log: URL, process: ChildProcess) {
        self.port = port
        self.log = log
        self.process = process
    }

    static func with<T>(_ body: (HostileReceiver) async throws -> T) async throws -> T {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("islet-hostile-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let process = try await ChildProcess(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", script, log.path], errorsApart: true)
        defer { try? FileManager.default.removeItem(at: log) }
        let port = try await process.waitFor("its port") { output in
            output.split(separator: "\n").first.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        }
        let receiver = HostileReceiver(port: port, log: log, process: process)
        do {
            let result = try await body(receiver)
            await receiver.stop()
            return result
        } catch {
            await receiver.stop()
            throw error
        }
    }

    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// The paths requested so far, in order.
    func requested() -> [String] {
        ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    /// Stops it: the requests it holds end without an answer.
    func stop() async {
        process.kill()
        await process.waitForEnd(orKillAfter: 30)
    }
}

/// What the webhook sender refuses to do or to wait for (docs/webhooks.md, "Safe by default"):
/// follow a redirect, wait past its timeout, read a huge answer whole, connect to a name that
/// resolves to loopback over https; and an endpoint that never answers holds only its own events.
struct WebhookRefusalTests {
    @Test(.hangDetector)
    func redirectsSlowAndHugeAnswersAndANameThatResolvesToLoopbackAreRefused() async throws {
        try await HostileReceiver.with { receiver in
            try await withIslet({ $0.webhooks.timeout = 1 }, webhooks: true) { islet in
                let key = try await islet.createApp("com.example.rides")
                var endpoints: [String: String] = [:]
                for (name, url) in [
                    ("redirect", receiver.url("/redirect")), ("slow", receiver.url("/slow")), ("huge", receiver.url("/huge")),
                    // localhost resolves to 127.0.0.1, which https may not reach: refused at connection, not when saved.
                    ("rebinding", "https://localhost:\(receiver.port)/hook"),
                ] {
                    let made = try await islet.request(.POST, "/v1/apps/com.example.rides/webhooks", key: key, body: #"{"url": "\#(url)"}"#)
                    #expect(made.status == 201, "\(name): \(made.json)")
                    endpoints[name] = made.json["id"]?.stringValue
                }
                _ = try await islet.start(key: key)

                var first: [String: JSONValue] = [:]
                for (name, id) in endpoints {
                    first[name] = try await eventually("\(name)'s first attempt") { () -> JSONValue? in
                        let attempts = try await islet.request(.GET, "/v1/apps/com.example.rides/webhooks/\(id)/attempts", key: key)
                        return attempts.json["attempts"]?.arrayValue?.last
                    }
                }
                // A redirect is an answer, not followed: a failure, and /ok never asked for.
                #expect(first["redirect"]?["status"] == 302, "\(String(describing: first["redirect"]))")
                #expect(!receiver.requested().contains("/ok"))
                // The slow answer is given up after the timeout.
                #expect(first["slow"]?["status"] == nil && first["slow"]?["error"] == "no answer within 1 s", "\(String(describing: first["slow"]))")
                // The huge one succeeds; its first 256 bytes are kept.
                #expect(first["huge"]?["status"] == 200 && first["huge"]?["response"]?.stringValue?.count == 256)
                // The name is resolved and its address refused before anything is sent.
                let rebinding = first["rebinding"]?["error"]?.stringValue ?? ""
                #expect(rebinding.contains("127.0.0.1 is a loopback address"), "\(rebinding)")
                #expect(receiver.requested().filter { $0 == "/hook" }.isEmpty)
                // Each failing endpoint holds, retried on its schedule.
                let slow = try await islet.request(.GET, "/v1/apps/com.example.rides/webhooks/\(endpoints["slow"]!)", key: key)
                #expect(slow.json["failing"]?["attempts"] != nil, "\(slow.json)")
            }
        }
    }

    /// An endpoint whose receiver never answers (the request held open for as long as the
    /// timeout allows, here a minute) does not hold another endpoint's events: those arrive
    /// while its request is still open.
    @Test(.hangDetector)
    func anEndpointThatNeverAnswersHoldsOnlyItsOwnEvents() async throws {
        try await HostileReceiver.with { receiver in
            try await withIslet({ $0.webhooks.timeout = 60; $0.webhooks.lease = 150 }, webhooks: true) { islet in
                let key = try await islet.createApp("com.example.rides")
                var endpoints: [String] = []
                for path in ["/never", "/ok"] {
                    let made = try await islet.request(.POST, "/v1/apps/com.example.rides/webhooks", key: key, body: #"{"url": "\#(receiver.url(path))"}"#)
                    endpoints.append(try #require(made.json["id"]?.stringValue))
                }
                let ride = try await islet.start(key: key)
                let update = try await islet.request(.POST, "/v1/activities/\(ride.id)/update", key: key, body: #"{"content": {"state": {"speed": 2}}}"#)
                #expect(update.status == 200)
                _ = try await eventually("both events at /ok") { receiver.requested().filter { $0 == "/ok" }.count == 2 ? true : nil }
                #expect(receiver.requested().filter { $0 == "/never" }.count == 1)
                // The request to /never is still open: no attempt of it is written yet.
                let never = try await islet.request(.GET, "/v1/apps/com.example.rides/webhooks/\(endpoints[0])/attempts", key: key)
                #expect(never.json["attempts"]?.arrayValue?.isEmpty == true, "\(never.json)")
                let ok = try await islet.request(.GET, "/v1/apps/com.example.rides/webhooks/\(endpoints[1])", key: key)
                #expect(ok.json["failing"] == nil)
            }
        }
    }

    /// A receiver that sends its head at once and its body a byte every 50 ms is cut off when
    /// `webhooks.timeout` is up: one deadline from resolving the name to the answer's last
    /// byte. Before, the head was timed and the body not: this one took 20 s and succeeded.
    @Test(.hangDetector)
    func anAnswerTrickledAByteAtATimeIsCutOffAtTheTimeout() async throws {
        try await HostileReceiver.with { receiver in
            try await withIslet({ $0.webhooks.timeout = 1 }, webhooks: true) { islet in
                let key = try await islet.createApp("com.example.rides")
                let made = try await islet.request(.POST, "/v1/apps/com.example.rides/webhooks", key: key, body: #"{"url": "\#(receiver.url("/trickle"))"}"#)
                let id = try #require(made.json["id"]?.stringValue)
                let tested = try await islet.request(.POST, "/v1/apps/com.example.rides/webhooks/\(id)/test", key: key)
                #expect(tested.json["status"] == nil && tested.json["error"] == "no answer within 1 s", "\(tested.json)")
                #expect(receiver.requested() == ["/trickle"])
            }
        }
    }

    /// A receiver that quotes what it was sent puts the activity's push token in its answer; the
    /// attempt log (read without a key on loopback, as the console does) and the test's answer
    /// keep at most 8 characters of it (docs/security.md).
    @Test(.hangDetector)
    func aReceiverThatQuotesItsRequestLeavesNoTokenInTheAttemptLog() async throws {
        try await HostileReceiver.with { receiver in
            try await withIslet({ $0.webhooks.timeout = 5 }, webhooks: true) { islet in
                let key = try await islet.createApp("com.example.rides")
                let made = try await islet.request(.POST, "/v1/apps/com.example.rides/webhooks", key: key, body: #"{"url": "\#(receiver.url("/echo"))"}"#)
                let id = try #require(made.json["id"]?.stringValue)
                let ride = try await islet.start(key: key, extra: #","pushType":"token""#)
                let token = try #require(ride.pushToken)
                let path = "/v1/apps/com.example.rides/webhooks/\(id)/attempts"
                let attempts = try await eventually("the echo's attempts") { () -> [JSONValue]? in
                    let attempts = try await islet.request(.GET, path, key: nil).json["attempts"]?.arrayValue ?? []
                    return attempts.isEmpty ? nil : attempts
                }
                for attempt in attempts {
                    let response = attempt["response"]?.stringValue ?? ""
                    #expect(attempt["status"] == 422 && response.contains("unknown device token \(token.prefix(8))…"), "\(response)")
                    #expect(!response.contains(token.prefix(9)), "\(response)")
                }
                // The key holder's view, and the test's own answer, keep no more of it.
                let withKey = try await islet.request(.GET, path, key: key).json["attempts"]?.arrayValue ?? []
                #expect(!withKey.isEmpty && withKey.allSatisfy { $0["response"]?.stringValue?.contains(token.prefix(9)) == false })
                #expect(receiver.requested().allSatisfy { $0 == "/echo" })
            }
        }
    }

    /// The addresses the attack saved as webhook URLs, spelled in numbers, each reaching a
    /// loopback, private or unspecified address: refused when saved, as `400 invalidRequest`.
    @Test(.hangDetector)
    func webhookURLsSpelledInNumbersAreRefusedWhenSaved() async throws {
        try await withIslet(webhooks: true) { islet in
            let key = try await islet.createApp("com.example.rides")
            for host in [
                "2130706433", "0177.0.0.1", "0x7f.0.0.1", "127.1", "0", "10.1", "012.0.0.1", "127.0.0.1.", "[::127.0.0.1]", "[2002:7f00:1::]",
            ] {
                let made = try await islet.request(.POST, "/v1/apps/com.example.rides/webhooks", key: key, body: #"{"url": "https://\#(host)/hook"}"#)
                #expect(made.status == 400 && made.json["error"]?["reason"] == "invalidRequest", "\(host): \(made.json)")
            }
            let listed = try await islet.request(.GET, "/v1/apps/com.example.rides/webhooks", key: key)
            #expect(listed.json["webhooks"]?.arrayValue?.isEmpty == true || listed.json["items"]?.arrayValue?.isEmpty == true, "\(listed.json)")
        }
    }
}
