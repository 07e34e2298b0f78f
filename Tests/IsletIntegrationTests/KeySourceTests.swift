import Foundation
import IsletCore
import IsletTestSupport
import Testing

/// A server that is not Islet and writes down every `Authorization` header it is sent, answering
/// each request `401` as a server that does not know the key would: where a mistyped `ISLET_URL`
/// may lead the CLI. Python's `http.server`, in a process of its own on a free port.
final class CaptureServer: Sendable {
    let process: ChildProcess
    let port: Int

    /// The `Authorization` headers it was sent (`-` for a request without one).
    var authorizations: [String] {
        process.output.split(separator: "\n").filter { $0.hasPrefix("AUTH ") }.map { String($0.dropFirst(5)) }
    }

    init() async throws {
        let script = """
            import http.server, sys
            class Capture(http.server.BaseHTTPRequestHandler):
                def answer(self):
                    print("AUTH " + (self.headers.get("Authorization") or "-"), flush=True)
                    body = b'{"error": {"reason": "unauthorized", "message": "This capture server knows no key."}}'
                    self.send_response(401)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = answer
                def log_message(self, *arguments): pass
            server = http.server.HTTPServer(("127.0.0.1", 0), Capture)
            print("PORT %d" % server.server_address[1], flush=True)
            server.serve_forever()
            """
        process = try await ChildProcess(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", script])
        port = try await process.waitFor("its port") { output in
            output.split(separator: "\n").first { $0.hasPrefix("PORT ") }.flatMap { Int($0.dropFirst(5)) }
        }
    }
}

extension DurabilityTests {
    /// The CLI preferred the admin key in `./.islet` over everything, and sent it to whatever
    /// `ISLET_URL` named: `islet apps key` against a capture server sent `Bearer islet_admin_…`.
    /// Now that key goes only to the server that keeps it; an explicit key always wins; a
    /// refusal says which key was sent, or why none was.
    @Test func theLocalAdminKeyGoesOnlyToTheServerThatKeepsIt() async throws {
        let data = DataDirectory()
        let server = try await ServerProcess(data: data)
        let capture = try await CaptureServer()
        let elsewhere = ["ISLET_URL": "http://127.0.0.1:\(capture.port)", "ISLET_STORE_DATA_DIRECTORY": data.path, "ISLET_KEY": ""]
        let commands = [
            ["apps", "key", "com.example.ci"], ["apps", "create", "com.example.ci"], ["apps", "list"], ["list"],
            ["apps", "delivery", "com.example.ci", "--off"], ["end", "--all"], ["status"],
        ]
        for command in commands {
            let answer = try await runCLI(command, environment: elsewhere)
            #expect(answer.status == 3, "\(command): \(answer.stderr)")
            #expect(
                (answer.stderr + answer.stdout).contains("belongs to the server at \(server.url), not to http://127.0.0.1:\(capture.port)"),
                "\(command): \(answer.stderr) \(answer.stdout)"
            )
        }
        #expect(!capture.authorizations.isEmpty)
        #expect(capture.authorizations.allSatisfy { $0 == "-" }, "\(capture.authorizations)")

        // The server that keeps it gets it, under either loopback name.
        let local = ["ISLET_URL": server.url, "ISLET_STORE_DATA_DIRECTORY": data.path, "ISLET_KEY": ""]
        let appKey = try await runCLI(["apps", "create", "com.example.ci", "-q"], environment: local)
        #expect(appKey.status == 0, "\(appKey.stderr)")
        let byName = local.merging(["ISLET_URL": "http://localhost:\(server.port)"]) { _, new in new }
        #expect(try await runCLI(["apps", "list"], environment: byName).status == 0)

        // An explicit key wins, even where only the admin key may act: the refusal says whose it was.
        let app = local.merging(["ISLET_KEY": appKey.stdout.trimmingCharacters(in: .whitespacesAndNewlines)]) { _, new in new }
        let refused = try await runCLI(["apps", "key", "com.example.ci"], environment: app)
        #expect(refused.status == 3)
        #expect(refused.stderr.contains("sent ISLET_KEY (an app's key)"), "\(refused.stderr)")
        let unknown = try await runCLI(["list", "--key", "islet_app_unknown"], environment: local)
        #expect(unknown.status == 3)
        #expect(unknown.stderr.contains("sent --key (an app's key, by its prefix), which this server does not know"), "\(unknown.stderr)")
        let explicitAdmin = try await runCLI(["apps", "key", "com.example.ci", "-q", "--key", data.adminKey], environment: app)
        #expect(explicitAdmin.status == 0, "\(explicitAdmin.stderr)")

        // A second server with its own admin key (a cluster's, given explicitly) is not sent ours.
        let other = DataDirectory()
        let second = try await ServerProcess(data: other)
        let cluster = ["ISLET_URL": second.url, "ISLET_STORE_DATA_DIRECTORY": data.path, "ISLET_KEY": other.adminKey]
        #expect(try await runCLI(["apps", "create", "com.example.ci", "-q"], environment: cluster).status == 0)
        let renewed = try await runCLI(["apps", "key", "com.example.ci", "-q"], environment: cluster)
        #expect(renewed.status == 0, "\(renewed.stderr)")
        #expect(await second.stop(signal: SIGTERM) == 0)
        #expect(await server.stop(signal: SIGTERM) == 0)
    }

    @Test func statusSaysTheServerTheKeyAndTheDataDirectory() async throws {
        let data = DataDirectory()
        let server = try await ServerProcess(data: data)
        let local = ["ISLET_URL": server.url, "ISLET_STORE_DATA_DIRECTORY": data.path, "ISLET_KEY": ""]
        let admin = try await runCLI(["status"], environment: local)
        #expect(admin.status == 0, "\(admin.stderr)")
        #expect(admin.stdout.contains("server:  \(server.url) — Islet"), "\(admin.stdout)")
        #expect(admin.stdout.contains("key:     the admin key in \(data.path)/admin.key — the admin key"), "\(admin.stdout)")
        #expect(admin.stdout.contains("data:    \(data.path) — admin key \(data.path)/admin.key, for the server at \(server.url)"), "\(admin.stdout)")

        let key = try await runCLI(["apps", "create", "com.example.ci", "-q"], environment: local).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let app = try await runCLI(["whoami", "--json"], environment: local.merging(["ISLET_KEY": key]) { _, new in new })
        #expect(app.status == 0, "\(app.stderr)")
        let report = try WireFormat.decoder().decode(JSONValue.self, from: Data(app.stdout.utf8))
        #expect(report["keySource"] == "ISLET_KEY" && report["keyKind"] == "app" && report["bundleId"] == "com.example.ci", "\(report)")

        // No key at all (another data directory): the keyless rights this machine has.
        let keyless = try await runCLI(["status"], environment: ["ISLET_URL": server.url, "ISLET_STORE_DATA_DIRECTORY": DataDirectory().path, "ISLET_KEY": ""])
        #expect(keyless.stdout.contains("key:     no key — without one this server gives this machine the keyless display's and console's rights"), "\(keyless.stdout)")
        let gone = try await runCLI(["status"], environment: local.merging(["ISLET_URL": "http://127.0.0.1:1"]) { _, new in new })
        #expect(gone.status == 7)
        #expect(await server.stop(signal: SIGTERM) == 0)
    }
}
