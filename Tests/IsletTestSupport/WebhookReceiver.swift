import Foundation

/// Whether Standard Webhooks' reference verifier for Python (`standardwebhooks`, PyPI) can be
/// imported; CI installs it (.ci/run) and sets ISLET_REQUIRE_PYTHON_PROVIDER, making its
/// absence a failure.
public let standardWebhooksAvailable = pythonHas("standardwebhooks", requiredBy: "ISLET_REQUIRE_PYTHON_PROVIDER")

/// A webhook receiver written with Standard Webhooks' reference verifier, on a free loopback
/// port: it verifies each request with the secret in `secretFile`, answers 500 to its first
/// `failures` requests and to every request in the `failingFor` seconds after its first, 200
/// after, and writes one JSON line per request to `log` (`verified`: true or the verifier's
/// error, `id`: the `webhook-id`, `status`: its answer, `event`: the body), and beside it how
/// many events it answered 200 (`answered()`). It runs as a
/// `ChildProcess`, which waits without holding one of Swift's few cooperative threads (a
/// blocking read of its output held one, and with another such wait every server in the test
/// process stopped answering).
public final class WebhookReceiver: Sendable {
    public let port: Int
    public let log: URL
    public let secretFile: URL
    private let process: ChildProcess

    static let script = #"""
        import http.server, json, sys, threading, time
        from standardwebhooks.webhooks import Webhook
        log, secret_file, failures, failing_for = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
        state = {"seen": 0, "first": None}
        answered = set()
        lock = threading.Lock()
        out = open(log, "a")
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body in one segment: else, on a kept-alive connection, Nagle and the
            # client's delayed ACK hold each answer 40 ms.
            disable_nagle_algorithm = True
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                headers = {k.lower(): v for k, v in self.headers.items()}
                try:
                    Webhook(open(secret_file).read().strip()).verify(body, headers)
                    verified = True
                except Exception as error:
                    verified = type(error).__name__
                with lock:
                    now = time.monotonic()
                    state["seen"] += 1
                    if state["first"] is None:
                        state["first"] = now
                    failing = state["seen"] <= failures or now - state["first"] < failing_for
                    status = 500 if failing else 200
                    out.write(json.dumps({"verified": verified, "id": headers.get("webhook-id"), "status": status, "event": json.loads(body)}) + "\n")
                    out.flush()
                    if not failing and headers.get("webhook-id") not in answered:
                        answered.add(headers.get("webhook-id"))
                        with open(log + ".answered", "w") as count:
                            count.write(str(len(answered)))
                reply = b"failing on purpose" if failing else b"ok"
                self.send_response(status)
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)
            def log_message(self, *args):
                pass
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        print(server.server_address[1], flush=True)
        server.serve_forever()
        """#

    private init(port: Int, log: URL, secretFile: URL, process: ChildProcess) {
        self.port = port
        self.log = log
        self.secretFile = secretFile
        self.process = process
    }

    public static func start(failures: Int = 0, failingFor: TimeInterval = 0) async throws -> WebhookReceiver {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("islet-webhooks-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let log = directory.appendingPathComponent("received.jsonl")
        let secretFile = directory.appendingPathComponent("secret")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let process = try await ChildProcess(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["python3", "-c", script, log.path, secretFile.path, String(failures), String(failingFor)], errorsApart: true
        )
        let port = try await process.waitFor("its port") { output in
            output.split(separator: "\n").first.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        }
        return WebhookReceiver(port: port, log: log, secretFile: secretFile, process: process)
    }

    /// How many events it answered 200, each counted once (without reading the log).
    public func answered() -> Int {
        (try? String(contentsOfFile: log.path + ".answered", encoding: .utf8)).flatMap { Int($0) } ?? 0
    }

    /// The hook's address.
    public var url: String { "http://127.0.0.1:\(port)/hook" }

    /// What it received, one JSON document a request, in order.
    public func receivedLines() throws -> [Data] {
        try Data(contentsOf: log).split(separator: UInt8(ascii: "\n")).map { Data($0) }
    }

    /// Runs `body` with a receiver, stopped after it however it ends.
    public static func with<T>(failures: Int = 0, failingFor: TimeInterval = 0, _ body: (WebhookReceiver) async throws -> T) async throws -> T {
        let receiver = try await start(failures: failures, failingFor: failingFor)
        do {
            let result = try await body(receiver)
            await receiver.stop()
            return result
        } catch {
            await receiver.stop()
            throw error
        }
    }

    public func stop() async {
        process.kill()
        await process.waitForEnd(orKillAfter: 30)
        try? FileManager.default.removeItem(at: log.deletingLastPathComponent())
    }
}
