import Foundation
import GRDB
import NIOHTTP1
import IsletCore
import IsletDelivery
import IsletServer
import IsletStore
import Logging
import IsletTestSupport
import Testing

@Suite("Bad input", .hangDetector)
struct BadInputTests {
    @Test func malformedJSONIsNamedAndChangesNothing() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.bike")
            let reply = try await islet.request(.POST, "/v1/activities", key: key, body: #"{"attributesType": "T", "content": "#)
            #expect(reply.status == 400)
            #expect(reply.reason == "malformedJSON")
            let notObject = try await islet.request(.POST, "/v1/activities", key: key, body: "[1,2]")
            #expect(notObject.status == 400)
            #expect(try await islet.isletClient(key: key).activities().isEmpty)
        }
    }

    @Test func missingWrongAndUnknownFieldsAreNamed() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.bike")
            let cases: [(String, String)] = [
                (#"{"attributesType":"T"}"#, "Missing field content."),
                (#"{"attributesType":"T","content":{}}"#, "Missing field content.state."),
                (#"{"attributesType":7,"content":{"state":{}}}"#, "attributesType should be a string."),
                (#"{"attributesType":"T","content":{"state":{},"relevanceScore":"high"}}"#, "content.relevanceScore should be a number."),
                (#"{"attributesType":"T","content":{"state":{},"staleDate":null}}"#, ""),
                (#"{"attributesType":"T","content":{"state":{}},"stateDate":1}"#, "Unknown field \"stateDate\" in the body"),
                (#"{"attributesType":"T","content":{"state":{},"stale":1}}"#, "Unknown field \"stale\" in content"),
                (#"{"attributesType":"T","content":{"state":[1]}}"#, "content.state must be a JSON object"),
                (#"{"attributesType":"","content":{"state":{}}}"#, "attributesType must be"),
                (#"{"attributesType":"T","content":{"state":{}},"pushType":"email"}"#, "pushType"),
                (#"{"attributesType":"T","content":{"state":{}},"style":"loud"}"#, "style"),
                (#"{"attributesType":"T","content":{"state":{}},"pushType":{"channel":"x","evil":1}}"#, "Unknown field \"evil\" in pushType"),
            ]
            for (body, message) in cases {
                let reply = try await islet.request(.POST, "/v1/activities", key: key, body: body)
                if message.isEmpty {
                    #expect(reply.status == 201, "\(body)")
                    continue
                }
                #expect(reply.status == 400, "\(body)")
                #expect(reply.reason == "invalidRequest", "\(body)")
                let text = reply.json["error"]?["message"]?.stringValue ?? ""
                #expect(text.contains(message), "\(body): \(text)")
            }
            #expect(try await islet.isletClient(key: key).activities().count == 1)
        }
    }

    @Test func unknownFieldsInsideADismissalPolicyAreNamed() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.bike")
            let activity = try await islet.start(key: key)
            let policy = #""dismissalPolicy":{"after":1700000000,"evil":1}"#
            for (path, body) in [
                ("/v1/activities/\(activity.id)/end", "{\(policy)}"),
                ("/v1/activities/by-key/job-1", #"{"attributesType":"T","content":{"state":{}},"end":true,\#(policy)}"#),
            ] {
                let reply = try await islet.request(path.contains("by-key") ? .PUT : .POST, path, key: key, body: body)
                #expect(reply.status == 400, "\(path)")
                #expect(reply.json["error"]?["message"]?.stringValue?.contains("Unknown field \"evil\" in dismissalPolicy") == true, "\(reply.text)")
            }
            #expect(try await islet.isletClient(key: key).activity(activity.id).state == .active)
            #expect(try await islet.isletClient(key: key).activities().count == 1)
        }
    }

    @Test func emptyBodyWhereOneIsNeeded() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.bike")
            let activity = try await islet.start(key: key)
            let reply = try await islet.request(.POST, "/v1/activities/\(activity.id)/update", key: key)
            #expect(reply.status == 400)
            #expect(reply.reason == "invalidRequest")
        }
    }

    @Test func oversizedBodyIsRefused() async throws {
        try await withIslet({ $0.server.maxBodySize = 2048 }) { islet in
            let key = try await islet.createApp("com.example.bike")
            let body = #"{"attributesType":"T","content":{"state":{"x":"\#(String(repeating: "y", count: 3000))"}}}"#
            let reply = try await islet.request(.POST, "/v1/activities", key: key, body: body)
            #expect(reply.status == 413)
            #expect(reply.reason == "payloadTooLarge")
        }
    }

    @Test func unknownRoutesAndMethods() async throws {
        try await withIslet { islet in
            for (method, path) in [(HTTPMethod.GET, "/v2/activities"), (.GET, "/devices"), (.GET, "/v1/activities/x/y")] {
                let reply = try await islet.request(method, path, key: islet.admin)
                #expect(reply.status == 404, "\(method) \(path)")
                #expect(reply.reason == "routeNotFound")
            }
            // A path that exists under other methods: 405, saying which.
            for (method, path, allowed) in [
                (HTTPMethod.DELETE, "/v1/activities", "GET, POST"), (.PATCH, "/v1/apps", "GET, POST"), (.POST, "/", "GET"),
                (.GET, "/v1/activities/ABCD/end", "POST"), (.POST, "/v1/events/ws", "GET"),
                // A written-out segment is taken before a parameter (the router's rule), so the
                // listening route's methods, not those of an endpoint named "listen".
                (.DELETE, "/v1/apps/x/webhooks/listen", "GET"), (.OPTIONS, "/v1/apps/x/webhooks/listen", "GET"),
            ] {
                let reply = try await islet.request(method, path, key: islet.admin)
                #expect(reply.status == 405, "\(method) \(path)")
                #expect(reply.reason == "methodNotAllowed")
                #expect(reply.headers.first(name: "Allow") == allowed, "\(method) \(path)")
            }
        }
    }

    @Test func aPathWithAnEmptySegmentIsNoRoute() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("keys")
            // Were the empty segments skipped, these would reach GET /v1/apps/{bundleId} (an app
            // named "keys"), list the apps, and end nothing in particular.
            for (method, path) in [
                (HTTPMethod.GET, "/v1/apps//keys"), (.GET, "/v1/apps/"), (.DELETE, "/v1/apps/keys/keys/"),
                (.POST, "/v1/activities//end"), (.GET, "/v1/devices//settings"),
            ] {
                let reply = try await islet.request(method, path, key: islet.admin)
                #expect(reply.status == 404, "\(method) \(path): \(reply.text)")
                #expect(reply.reason == "routeNotFound")
            }
            #expect(try await islet.request(.GET, "/v1/apps/keys", key: key).status == 200)
            #expect(try await islet.request(.GET, "/").status == 200)
        }
    }

    @Test func pathParametersArrivePercentDecoded() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.ci")
            // As IsletClient (and every URL library) encodes them.
            let started = try await islet.request(
                .PUT, "/v1/activities/by-key/nightly%20build%2F42", key: key,
                body: #"{"attributesType": "My Type", "content": {"state": {"status": "running"}}}"#
            )
            #expect(started.status == 201)
            #expect(started.json["key"] == "nightly build/42")
            let again = try await islet.request(
                .PUT, "/v1/activities/by-key/nightly%20build%2F42", key: key, body: #"{"attributesType": "My Type", "content": {"state": {}}}"#
            )
            #expect(again.status == 200)
            // A layout registered for "My Type" draws that type's activities.
            let layout = try await islet.request(
                .PUT, "/v1/apps/com.example.ci/layouts/My%20Type", key: key,
                body: #"{"lockScreen": {"type": "Text", "text": "drawn by its layout"}}"#
            )
            #expect(layout.status == 201)
            #expect(layout.json["attributesType"] == "My Type")
            let id = started.json["id"]?.stringValue ?? ""
            let presentation = try await islet.request(.GET, "/v1/activities/\(id)/presentation", key: key)
            #expect(presentation.json["lockScreen"]?.stringValue?.contains("drawn by its layout") == true)
            // Sent as it is: an HTTP library would not send it.
            let broken = try await RawHTTP.exchange(port: islet.port, bytes: Array("""
                GET /v1/apps/com.example.ci/layouts/%E2%28 HTTP/1.1\r
                Host: 127.0.0.1\r
                Authorization: Bearer \(key)\r
                Connection: close\r
                \r

                """.utf8))
            #expect(broken.hasPrefix("HTTP/1.1 400") && broken.contains(#""reason":"invalidRequest""#), "\(broken)")
        }
    }

    @Test func namesAreCountedInUnicodeScalarsEverywhere() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.ci")
            // 200 characters in 200 scalars (400 UTF-8 bytes), and 200 characters in 400 scalars.
            let precomposed = String(repeating: "\u{E9}", count: 200), combining = String(repeating: "e\u{301}", count: 200)
            func path(_ name: String) -> String { name.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? name }
            func start(type: String, byKey: String? = nil) async throws -> Int {
                let body = #"{"attributesType": "\#(type)", "content": {"state": {}}}"#
                return try await islet.request(
                    byKey == nil ? .POST : .PUT, byKey.map { "/v1/activities/by-key/\(path($0))" } ?? "/v1/activities", key: key, body: body
                ).status
            }
            // A type that can start can be drawn and registered, and one that cannot, cannot.
            #expect(try await start(type: precomposed) == 201)
            #expect(try await islet.request(.PUT, "/v1/apps/com.example.ci/layouts/\(path(precomposed))", key: key, body: "{}").status == 201)
            #expect(try await islet.request(.PUT, "/v1/apps/com.example.ci/activity-types/\(path(precomposed))", key: key, body: "{}").status == 200)
            #expect(try await start(type: combining) == 400)
            #expect(try await islet.request(.PUT, "/v1/apps/com.example.ci/layouts/\(path(combining))", key: key, body: "{}").status == 400)
            #expect(try await islet.request(.PUT, "/v1/apps/com.example.ci/activity-types/\(path(combining))", key: key, body: "{}").status == 400)
            // The same count for the key of start-or-update.
            #expect(try await start(type: "T", byKey: precomposed) == 201)
            #expect(try await start(type: "T", byKey: combining) == 400)
        }
    }

    @Test func missingAndWrongKeys() async throws {
        // A server reachable from other machines: no keyless console (docs/console.md).
        try await withIslet({ $0.server.host = "0.0.0.0" }) { islet in
            let none = try await islet.request(.GET, "/v1/activities")
            #expect(none.status == 401)
            #expect(none.reason == "unauthorized")
            #expect(none.headers.first(name: "WWW-Authenticate") == "Bearer")
            let wrong = try await islet.request(.GET, "/v1/activities", key: "islet_app_nope")
            #expect(wrong.status == 401)
            #expect(wrong.reason == "unauthorized")
            let health = try await islet.request(.GET, "/healthz", key: "islet_app_nope")
            #expect(health.status == 401)
            let open = try await islet.request(.GET, "/healthz")
            #expect(open.status == 200)
            // Where the node's data is.
            #expect(open.json["store"]?["kind"] == "sqlite" && open.json["store"]?["shared"] == false)
            #expect(open.json["store"]?["location"]?.stringValue?.hasSuffix("islet.sqlite") == true, "\(open.json)")
        }
    }

    @Test func appKeysCannotManage() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.bike")
            for (method, path, body) in [
                (HTTPMethod.POST, "/v1/apps", #"{"bundleId":"com.example.other"}"#),
                (.POST, "/v1/devices", #"{"id":"phone"}"#),
                (.PUT, "/v1/devices/default/settings", #"{"bundleId":"com.example.bike","activitiesEnabled":false}"#),
            ] {
                let reply = try await islet.request(method, path, key: key, body: body)
                #expect(reply.status == 403, "\(path)")
                #expect(reply.reason == "forbidden")
            }
            #expect(try await islet.isletClient(key: islet.admin).apps().count == 1)
            #expect(try await islet.isletClient(key: islet.admin).devices().count == 1)
        }
    }

    @Test func unknownThingsAreNotFound() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.bike")
            let cases: [(HTTPMethod, String, String?, String)] = [
                (.GET, "/v1/apps/com.example.none", nil, "appNotFound"),
                (.GET, "/v1/devices/phone-9/settings", nil, "deviceNotFound"),
                (.GET, "/v1/activities/NOPE", nil, "activityNotFound"),
                (.POST, "/v1/activities/NOPE/update", #"{"content":{"state":{}}}"#, "activityNotFound"),
                (.POST, "/v1/activities/NOPE/end", nil, "activityNotFound"),
                (.POST, "/v1/activities/NOPE/dismiss", nil, "activityNotFound"),
                (.GET, "/v1/activities/NOPE/events", nil, "activityNotFound"),
                (.POST, "/v1/activities", #"{"attributesType":"T","content":{"state":{}},"device":"phone-9"}"#, "deviceNotFound"),
            ]
            for (method, path, body, reason) in cases {
                let reply = try await islet.request(method, path, key: path.hasSuffix("dismiss") ? islet.admin : key, body: body)
                #expect(reply.status == 404, "\(path)")
                #expect(reply.reason == reason, "\(path)")
            }
            let settings = try await islet.request(.PUT, "/v1/devices/default/settings", key: islet.admin, body: #"{"bundleId":"com.example.none","activitiesEnabled":false}"#
            )
            #expect(settings.reason == "appNotFound")
        }
    }

    @Test func duplicatesAreConflicts() async throws {
        try await withIslet { islet in
            _ = try await islet.createApp("com.example.bike")
            let app = try await islet.request(.POST, "/v1/apps", key: islet.admin, body: #"{"bundleId":"com.example.bike"}"#)
            #expect(app.status == 409)
            #expect(app.reason == "appAlreadyExists")
            let device = try await islet.request(.POST, "/v1/devices", key: islet.admin, body: #"{"id":"default"}"#)
            #expect(device.status == 409)
            #expect(device.reason == "deviceAlreadyExists")
            let badBundle = try await islet.request(.POST, "/v1/apps", key: islet.admin, body: #"{"bundleId":"com example"}"#)
            #expect(badBundle.reason == "invalidRequest")
            for id in ["a/b", ".", ".."] {
                let badDevice = try await islet.request(.POST, "/v1/devices", key: islet.admin, body: #"{"id":"\#(id)"}"#)
                #expect(badDevice.reason == "invalidRequest", "\(id)")
            }
            #expect(try await islet.request(.POST, "/v1/devices", key: islet.admin, body: #"{"id":"a.b"}"#).status == 201)
        }
    }

    @Test func pagesAreServedFromTheirDirectoryOnly() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("islet-pages-\(UUID().uuidString)")
        let pages = root.appendingPathComponent("pages")
        try FileManager.default.createDirectory(at: pages, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        try "<p>mine</p>".write(to: pages.appendingPathComponent("index.html"), atomically: true, encoding: .utf8)
        try "secret".write(to: root.appendingPathComponent("secret.txt"), atomically: true, encoding: .utf8)
        try await withIslet({ $0.server.pages = pages.path }) { islet in
            #expect(try await islet.request(.GET, "/pages/").text == "<p>mine</p>")
            #expect(try await islet.request(.GET, "/pages/index.html").status == 200)
            for path in ["/pages/../secret.txt", "/pages/%2e%2e/secret.txt", "/pages/..%2fsecret.txt", "/pages/nope.html"] {
                let reply = try await islet.request(.GET, path)
                #expect(reply.status >= 400 && !reply.text.contains("secret"), "\(path)")
            }
        }
    }

    @Test func badQueryParameters() async throws {
        try await withIslet { islet in
            for path in [
                "/v1/activities?state=running", "/v1/activities?limit=0", "/v1/activities?limit=abc",
                "/v1/events?since=abc", "/v1/events?coalesce=maybe", "/v1/activities?limit=1001",
                "/v1/activities?cursor=abc", "/v1/devices?cursor=AXsidCI6MX0", "/v1/apps?limit=-1",
                "/v1/activities?updatedSince=yesterday", "/v1/activities?updatedSince=inf",
                "/v1/activities?q=" + String(repeating: "a", count: 257),
            ] {
                let reply = try await islet.request(.GET, path, key: islet.admin)
                #expect(reply.status == 400, "\(path)")
                #expect(reply.reason == "invalidRequest", "\(path)")
            }
            // A parameter the route does not take is named, as an unknown body field is.
            let misspelled = try await islet.request(.GET, "/v1/activities?stat=active", key: islet.admin)
            #expect(misspelled.status == 400)
            #expect(misspelled.json["error"]?["message"]?.stringValue == #"Unknown query parameter "stat"; GET /v1/activities takes bundleId, cursor, device, limit, q, state, type, updatedSince."#)
            #expect(try await islet.request(.GET, "/v1/apps?bundleId=x", key: islet.admin).reason == "invalidRequest")
            // Known ones pass; a key in the query only where streams take it; pages take anything.
            #expect(try await islet.request(.GET, "/v1/activities?state=active&limit=5").status == 200)
            #expect(try await islet.request(.GET, "/v1/activities?state=active&key=\(islet.admin)").reason == "invalidRequest")
            #expect(try await islet.request(.GET, "/?utm_source=mail").status == 200)
        }
    }

    @Test func storeFailureIsAnInternalErrorAndHealthSaysUnavailable() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.bike")
            // Break the database behind the server's back.
            let queue = try DatabaseQueue(path: islet.directory.appendingPathComponent("islet.sqlite").path)
            try await queue.write { db in try db.execute(sql: "DROP TABLE event") }
            let reply = try await islet.request(.POST, "/v1/activities", key: key, body: #"{"attributesType":"T","content":{"state":{}}}"#
            )
            #expect(reply.status == 500)
            #expect(reply.reason == "internalError")
            let health = try await islet.request(.GET, "/healthz")
            #expect(health.status == 503)
            #expect(health.reason == "unavailable")
        }
    }

    @Test func adminKeyFileIsTheOwnersOnly() async throws {
        try await withIslet { islet in
            let path = islet.directory.appendingPathComponent("admin.key").path
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
            let stored = try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(stored == islet.admin)
        }
    }

    @Test func secondServerOnTheSameDataIsRefused() async throws {
        try await withIslet { islet in
            var configuration = islet.islet.configuration
            configuration.server.port = 0
            await #expect(throws: IsletError.self) {
                _ = try await Islet(
                    configuration: configuration, logger: Logger(label: "second"), openStore: { try SQLiteStore($0) },
                    openTransport: PushServiceTransport.open
                )
            }
        }
    }

    @Test func malformedHTTPIsAnsweredAndClosed() async throws {
        try await withIslet { islet in
            let reply = try await RawHTTP.exchange(port: islet.port, bytes: Array("GET / HTTP/1.1\r\nBad Header\r\n\r\n".utf8))
            #expect(reply.hasPrefix("HTTP/1.1 400"))
            #expect(reply.contains("invalidRequest"))
            #expect(try await islet.request(.GET, "/healthz").status == 200)
        }
    }
}
