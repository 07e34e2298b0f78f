import AsyncHTTPClient
import Foundation
import GRDB
import IsletClient
import IsletCore
import IsletTestSupport
import NIOCore
import Testing

/// docs/android.md's loop with the real programs: `islet serve` A is the backend and sends FCM
/// messages to `islet serve` B, which plays Google (its push port answers `/token` and
/// `messages:send`) and an Android phone. The test plays the Android app as docs/android.md
/// writes it: with nothing of A's but a client key, it registers an installation
/// (`platform: android`) and reports the phone's registration token on B with the installation's
/// credential — the requests an app's `onNewToken` sends.
@Suite("Delivery to Android phones, A to B", .serialized, .hangDetector)
struct AndroidDeliveryLoopTests {
    static let bundleId = "com.example.ride"
    static let phone = "pixel-1"
    static let project = "islet-loop-test"

    final class Loop: @unchecked Sendable {
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        let aData = DataDirectory()
        let bData = DataDirectory()
        var a: ServerProcess!
        var b: ServerProcess!
        var keyOnA = ""
        var keyOnB = ""
        /// The phone's device on A: the installation the app registered.
        var phoneOnA: DeviceID = ""
        /// The app on the phone, as A sees it: the installation's credential.
        var appOnPhone: IsletClient!
        let aEnvironment: [String: String]
        let bEnvironment: [String: String]

        init(a: [String: String], b: [String: String]) {
            aEnvironment = ["ISLET_DELIVERY_MAX_BACKOFF": "1s"].merging(a) { _, given in given }
            bEnvironment = b
        }

        var appOnA: IsletClient { IsletClient(server: a.url, key: keyOnA, http: http) }
        var appOnB: IsletClient { IsletClient(server: b.url, key: keyOnB, http: http) }
        var adminOnA: IsletClient { IsletClient(server: a.url, key: aData.adminKey, http: http) }
        var adminOnB: IsletClient { IsletClient(server: b.url, key: bData.adminKey, http: http) }

        /// Starts B and A, makes the app on both and the Android phone on B, gives A the service
        /// account B issued (sending to B, trusting B's authority); the app registers with A's
        /// client key and reports the phone's registration token.
        func start() async throws {
            b = try await ServerProcess(data: bData, environment: bEnvironment)
            a = try await ServerProcess(data: aData, environment: aEnvironment)
            keyOnA = try await adminOnA.createApp(bundleId: bundleId).apiKey
            keyOnB = try await adminOnB.createApp(bundleId: bundleId).apiKey
            let device = try await adminOnB.createDevice(id: phone, platform: .android)
            #expect(device.platform == .android)
            let account = try await adminOnB.issueServiceAccount(projectId: project)
            #expect(account["token_uri"] == .string("https://127.0.0.1:\(b.apnsPort!)/token"))
            let credential = try await adminOnA.putFCMCredential(bundleId: bundleId, FCMCredentialBody(
                serviceAccount: account, url: "https://127.0.0.1:\(b.apnsPort!)",
                caCertificate: try String(contentsOf: bData.url.appendingPathComponent("tls/ca.pem"), encoding: .utf8)
            ))
            #expect(credential.projectId == project)
            let clientKey = try await appOnA.createClientKey(bundleId: bundleId, name: "the Android app").key
            let registered = try await IsletClient(server: a.url, key: clientKey, http: http)
                .registerInstallation(RegisterInstallationBody(bundleId: bundleId, platform: .android))
            #expect(registered.installation.platform == .android)
            phoneOnA = registered.installation.id
            appOnPhone = IsletClient(server: a.url, key: registered.credential, http: http)
            _ = try await appOnPhone.registerFCMToken(try await registrationToken(), device: phoneOnA)
        }

        /// The phone's registration token for the app, as B's settings give it.
        func registrationToken() async throws -> String {
            try #require(try await appOnB.settings(device: phone).first { $0.bundleId == bundleId }?.fcmToken)
        }

        func restartA() async throws {
            let old = a!
            await old.stop(signal: SIGKILL)
            a = try await ServerProcess(data: aData, port: old.port, environment: aEnvironment)
        }

        func stop() async {
            if let a { await a.stop(signal: SIGTERM) }
            if let b { await b.stop(signal: SIGTERM) }
            try? await http.shutdown()
        }

        /// Starts a ride on A for the phone and waits until B shows it.
        func startRide(_ ride: String, status: String = "booked") async throws -> (a: Activity, b: Activity) {
            let onA = try await appOnA.start(ActivityRequest(
                attributesType: "RideAttributes", attributes: ["ride": .string(ride)],
                content: ActivityContent(state: ["status": .string(status)]), deviceId: phoneOnA
            ))
            let onB = try await eventually("ride \(ride) appears on B") {
                try await self.appOnB.activities().first { $0.attributes["ride"] == .string(ride) }
            }
            return (onA, onB)
        }

        func update(_ id: ActivityID, _ status: String) async throws {
            _ = try await appOnA.update(id, ContentUpdate(content: ActivityContent(state: ["status": .string(status)])))
        }

        @discardableResult
        func waitOnB(_ id: ActivityID, status: String, state: ActivityState? = nil, within seconds: Double = 30) async throws -> Activity {
            try await appOnB.waitFor(id, status: status, state: state, within: seconds)
        }

        func statusesOnB(_ id: ActivityID) async throws -> [String] {
            try await appOnB.statuses(id)
        }
    }

    func withLoop(a: [String: String] = [:], b: [String: String] = [:], _ body: (Loop) async throws -> Void) async throws {
        let loop = Loop(a: a, b: b)
        do {
            try await loop.start()
            try await body(loop)
        } catch {
            if let a = loop.a { Issue.record("A said, last:\n\(a.output.suffix(3_000))") }
            if let b = loop.b { Issue.record("B said, last:\n\(b.output.suffix(2_000))") }
            await loop.stop()
            throw error
        }
        await loop.stop()
    }

    @Test func theLoopStartsUpdatesAndEndsARideOnTheAndroidPhone() async throws {
        try await withLoop { loop in
            let (onA, onB) = try await loop.startRide("r1")
            #expect(onB.deviceId == Self.phone && onB.attributesType == "RideAttributes")
            // A change whose FCM message would pass 4,096 bytes is refused at the API, with its size,
            // and nothing is sent (the default notification repeats the state: twice 2,000 bytes).
            do {
                try await loop.update(onA.id, String(repeating: "x", count: 2_000))
                Issue.record("an update past FCM's 4,096 bytes was taken")
            } catch ClientError.refused(let status, let error) {
                #expect(status == 413 && error.reason == .payloadTooLarge && error.message.contains("4096"), "\(error)")
            }
            for status in ["pickup", "onTheWay", "arriving"] { try await loop.update(onA.id, status) }
            _ = try await loop.appOnA.end(onA.id, EndRequest(content: ActivityContent(state: ["status": "arrived"])))
            try await loop.waitOnB(onB.id, status: "arrived", state: .ended)
            let seen = try await loop.statusesOnB(onB.id)
            #expect(seen.first == "booked" && seen.last == "arrived")
            #expect(DeliveryLoopTests.inOrder(seen, ["booked", "pickup", "onTheWay", "arriving", "arrived"]), "\(seen)")
            // A's log: every FCM request answered 200, with the name FCM gave the message.
            let log = try await loop.appOnA.deliveries(onA.id)
            let sent = log.filter { $0.report.status != nil }
            #expect(sent.first?.report.event == "start" && sent.last?.report.event == "end")
            #expect(sent.allSatisfy { $0.report.status == 200 && $0.report.outcome == .delivered }, "\(sent.map(\.report))")
            #expect(sent.allSatisfy { $0.report.note?.contains("projects/\(Self.project)/messages/") == true }, "\(sent.map(\.report.note))")
            // One access token served every message: reused, not fetched for each.
            let grants = try await DatabaseQueue(path: loop.bData.url.appendingPathComponent("islet.sqlite").path).read { db in
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM fcmAccessToken")
            }
            #expect(grants == 1)
            // B's log of its push port shows the token request, never the signed assertion in it
            // (good for an access token for an hour), nor the access token sent with each message.
            var request = HTTPClientRequest(url: loop.b.url + "/v1/apns/requests")
            request.headers.add(name: "Authorization", value: "Bearer \(loop.bData.adminKey)")
            let requests = String(buffer: try await loop.http.execute(request, timeout: .seconds(10)).body.collect(upTo: 1 << 22))
            #expect(requests.contains("\"/token\"") && requests.contains("messages:send"), "\(requests.prefix(500))")
            #expect(!requests.contains("assertion=") && !requests.contains("ya29."), "\(requests.prefix(2_000))")
        }
    }

    @Test func everyChangeArrivesInOrderThroughGooglesFailures() async throws {
        try await withLoop(b: ["ISLET_APNS_FAULTS": "500=0.1, 503=0.05, 429=0.05, close=0.02"]) { loop in
            var rides: [(a: Activity, b: Activity)] = []
            for ride in 1...3 { rides.append(try await loop.startRide("r\(ride)")) }
            for step in 1...12 {
                for (onA, _) in rides { try await loop.update(onA.id, "step \(step)") }
            }
            for (onA, _) in rides {
                _ = try await loop.appOnA.end(onA.id, EndRequest(content: ActivityContent(state: ["status": "done"])))
            }
            var retries = 0
            for (onA, onB) in rides {
                try await loop.waitOnB(onB.id, status: "done", state: .ended, within: 90)
                let seen = try await loop.statusesOnB(onB.id)
                #expect(DeliveryLoopTests.inOrder(seen, ["booked"] + (1...12).map { "step \($0)" } + ["done"]), "out of order on B: \(seen)")
                retries += try await loop.appOnA.deliveries(onA.id).filter { $0.report.outcome == .retrying }.count
            }
            #expect(retries > 0)
        }
    }

    /// The app opted in to Firebase installation IDs (firebase-messaging 25.1.2+): it reports its
    /// ID instead of a token, and A sends `message.fid`. When the app asks for a token again, B
    /// answers `UNREGISTERED` for the ID and A retires it.
    @Test func aPhoneReachedByItsInstallationIdGetsStartUpdatesAndEnd() async throws {
        try await withLoop { loop in
            let settings = try await loop.adminOnB.updateSettings(device: Self.phone, bundleId: Self.bundleId, fcmInstallationIdEnabled: true)
            let fid = try #require(settings.fcmInstallationId)
            let recorded = try await loop.appOnPhone.registerFCMAddress(.fid(fid), device: loop.phoneOnA)
            #expect(recorded.kind == .fid && recorded.token == fid)
            // The ID replaced the token: one FCM address per phone and app.
            let tokens = try await loop.appOnA.phone(loop.phoneOnA).tokens
            #expect(tokens.filter { $0.retiredAt == nil }.map(\.kind) == [.fid], "\(tokens)")
            let (onA, onB) = try await loop.startRide("r1")
            for status in ["pickup", "arriving"] { try await loop.update(onA.id, status) }
            _ = try await loop.appOnA.end(onA.id, EndRequest(content: ActivityContent(state: ["status": "arrived"])))
            try await loop.waitOnB(onB.id, status: "arrived", state: .ended)
            #expect(DeliveryLoopTests.inOrder(try await loop.statusesOnB(onB.id), ["booked", "pickup", "arriving", "arrived"]))
            // A's log names the installation ID it sent to.
            let sent = try await loop.appOnA.deliveries(onA.id).filter { $0.report.status != nil }
            #expect(sent.first?.report.event == "start" && sent.last?.report.event == "end")
            #expect(sent.allSatisfy { $0.report.status == 200 && $0.report.target == "fid \(fid)" }, "\(sent.map(\.report))")

            // The app asks for a token again: B retires the ID, and A's next message retires it too.
            _ = try await loop.adminOnB.updateSettings(device: Self.phone, bundleId: Self.bundleId, fcmInstallationIdEnabled: false)
            let next = try await loop.appOnA.start(ActivityRequest(
                attributesType: "RideAttributes", attributes: ["ride": "r2"], content: ActivityContent(state: ["status": "booked"]),
                deviceId: loop.phoneOnA
            ))
            let retired = try await eventually("A retires the installation ID") {
                try await loop.appOnA.deliveries(next.id).first { $0.report.outcome == .tokenRetired }
            }
            #expect(retired.report.status == 404 && retired.report.reason == "UNREGISTERED", "\(retired.report)")
            #expect(retired.report.note?.contains("the installation ID is retired") == true, "\(retired.report.note ?? "")")
            let gone = try await loop.appOnA.phone(loop.phoneOnA).tokens.first { $0.token == fid }
            #expect(gone?.retiredAt != nil && gone?.retiredReason == "UNREGISTERED")
        }
    }

    @Test func anUnregisteredTokenIsRetiredAndNotSentToAgain() async throws {
        try await withLoop { loop in
            let (onA, _) = try await loop.startRide("r1")
            // The app was uninstalled: the phone's token is one FCM no longer knows.
            _ = try await loop.appOnPhone.registerFCMToken("gone:APA91bTheAppWasUninstalled", device: loop.phoneOnA)
            try await loop.update(onA.id, "pickup")
            let retired = try await eventually("A retires the token") {
                try await loop.appOnA.deliveries(onA.id).first { $0.report.outcome == .tokenRetired }
            }
            #expect(retired.report.status == 404 && retired.report.reason == "UNREGISTERED", "\(retired.report)")
            let token = try await loop.appOnA.phone(loop.phoneOnA).tokens.first { $0.token == "gone:APA91bTheAppWasUninstalled" }
            #expect(token?.retiredAt != nil && token?.retiredReason == "UNREGISTERED")
            // Nothing more goes to it.
            try await loop.update(onA.id, "onTheWay")
            let dropped = try await eventually("the next update is not sent") {
                try await loop.appOnA.deliveries(onA.id).last { $0.report.outcome == .dropped || $0.report.outcome == .failed }
            }
            #expect(dropped.report.status == nil, "\(dropped.report)")
        }
    }

    /// FCM takes 240 messages a minute to one phone (a burst of 60, then 3 a second): A keeps
    /// within it, so B — playing Google with the same quota — never answers 429, and what A
    /// held back goes a moment later. The starts wait in A's outbox (delivery paused) and are
    /// released together, so they are due at once however slowly this machine makes them.
    @Test func theSenderKeepsEachPhoneWithinFCMsQuota() async throws {
        let many = ["ISLET_LIFECYCLE_MAX_ACTIVITIES_PER_APP": "100", "ISLET_LIFECYCLE_MAX_ACTIVITIES_PER_DEVICE": "100"]
        try await withLoop(a: many, b: many) { loop in
            _ = try await loop.appOnA.updateApp(Self.bundleId, UpdateAppBody(deliveryPaused: true))
            var started: [Activity] = []
            for ride in 1...64 {
                started.append(try await loop.appOnA.start(ActivityRequest(
                    attributesType: "RideAttributes", attributes: ["ride": .string("r\(ride)")],
                    content: ActivityContent(state: ["status": "booked"]), deviceId: loop.phoneOnA
                )))
            }
            _ = try await loop.appOnA.updateApp(Self.bundleId, UpdateAppBody(deliveryPaused: false))
            _ = try await eventually("all 64 rides appear on B", within: 30) {
                try await loop.appOnB.activities(ActivityFilter(limit: 100)).count >= 64 ? true : nil
            }
            var paced = 0
            for activity in started {
                let log = try await loop.appOnA.deliveries(activity.id)
                #expect(!log.contains { $0.report.status == 429 }, "\(log.map(\.report))")
                paced += log.filter { $0.report.note?.hasPrefix("paced:") == true }.count
            }
            #expect(paced >= 4, "the sender held back what passed the burst of 60: \(paced)")
        }
    }

    @Test func aKilledBackendDeliversEveryAcknowledgedChangeAfterItsRestart() async throws {
        try await withLoop { loop in
            var rides: [(a: Activity, b: Activity)] = []
            for ride in 1...3 { rides.append(try await loop.startRide("r\(ride)")) }
            var last: [ActivityID: String] = [:]
            for step in 1...30 {
                for (onA, _) in rides {
                    try await loop.update(onA.id, "step \(step)")
                    last[onA.id] = "step \(step)"
                }
                if step == 15 { try await loop.restartA() }
            }
            for (onA, onB) in rides {
                try await loop.waitOnB(onB.id, status: last[onA.id]!, within: 60)
                let seen = try await loop.statusesOnB(onB.id)
                #expect(DeliveryLoopTests.inOrder(seen, ["booked"] + (1...30).map { "step \($0)" }), "out of order on B: \(seen)")
            }
        }
    }

    /// A token endpoint that takes the request and never answers held a SIGTERM for 30 s, past
    /// `server.shutdownTimeout` (issue 41): the exchange had a fixed timeout of its own, and ran
    /// on where the stopping sender could not cancel it. It takes at most the delivery's request
    /// timeout now (here 30 s, half the lease), and a stop cancels it.
    @Test func aTokenEndpointThatNeverAnswersHoldsNoStop() async throws {
        try await withLoop(a: ["ISLET_DELIVERY_LEASE": "2m", "ISLET_SERVER_SHUTDOWN_TIMEOUT": "1m"]) { loop in
            let tls = loop.bData.url.appendingPathComponent("tls")
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Providers/silent_tls_server.py")
            let silent = try await ChildProcess(
                URL(fileURLWithPath: "/usr/bin/env"),
                ["python3", script.path, tls.appendingPathComponent("cert.pem").path, tls.appendingPathComponent("key.pem").path]
            )
            defer { silent.kill() }
            let port = try await silent.waitFor("its port") { output in
                output.split(separator: "\n").first { $0.hasPrefix("listening ") }.flatMap { Int($0.dropFirst("listening ".count)) }
            }
            let account = try await loop.adminOnB.issueServiceAccount(projectId: "islet-silent", tokenUri: "https://127.0.0.1:\(port)/token")
            _ = try await loop.adminOnA.putFCMCredential(bundleId: Self.bundleId, FCMCredentialBody(
                serviceAccount: account, url: "https://127.0.0.1:\(loop.b.apnsPort!)",
                caCertificate: try String(contentsOf: tls.appendingPathComponent("ca.pem"), encoding: .utf8)
            ))
            _ = try await loop.appOnA.start(ActivityRequest(
                attributesType: "RideAttributes", attributes: ["ride": "silent"], content: ActivityContent(state: ["status": "booked"]),
                deviceId: loop.phoneOnA
            ))
            _ = try await silent.waitFor("A's token request") { $0.contains("request POST /token") ? true : nil }
            let stopping = ContinuousClock.now
            let ending = await loop.a.stop(signal: SIGTERM)
            let took = ContinuousClock.now - stopping
            #expect(ending == 0, "\(loop.a.output.suffix(2_000))")
            #expect(took < .seconds(20), "the stop waited \(took) for the token request")
        }
    }
}
