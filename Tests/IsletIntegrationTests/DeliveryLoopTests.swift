import AsyncHTTPClient
import Crypto
import Foundation
import GRDB
import IsletClient
import IsletCore
import IsletTestSupport
import NIOCore
import Synchronization
import Testing

/// The loop of docs/delivery.md, with the real programs: `islet serve` A is the backend and
/// sends over HTTP/2 to `islet serve` B's APNs endpoint; B plays Apple and the phone; the
/// example phone app (`phone-app`: ActivityKit's API on IsletKit) runs against B and reports
/// its tokens to A.
@Suite("Delivery to real iPhones, A to B", .serialized, .hangDetector)
struct DeliveryLoopTests {
    static let bundleId = "com.example.delivery"

    /// The two servers, the app's key on each, and the phone app.
    final class Loop: @unchecked Sendable {
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        let aData = DataDirectory()
        let bData = DataDirectory()
        var a: ServerProcess!
        var b: ServerProcess!
        var phoneApp: ChildProcess?
        var keyOnA = ""
        var keyOnB = ""
        /// The app's client key on A: all the phone app holds of A (docs/installations.md).
        var clientKeyOnA = ""
        /// The phone's device on A: the installation the phone app registered.
        var phone: DeviceID = ""
        /// Where the phone app keeps its installation, so a relaunch is the same installation.
        var phoneStore: URL { aData.url.appendingPathComponent("phone-app-installation.json") }
        /// The user the phone app signs in as, with A's signature of the id (as a backend hands
        /// its app when its user signs in); none by default.
        var signedInUser: String?
        private var userSignature: String?
        /// The app's .p8 key: its public half registered on B, the whole on A.
        let providerKey = P256.Signing.PrivateKey()
        let bEnvironment: [String: String]
        /// Retries come back within a second or two, so faults cost a test little time.
        let aEnvironment: [String: String]

        init(a: [String: String], b environment: [String: String]) {
            aEnvironment = ["ISLET_DELIVERY_MAX_BACKOFF": "1s"].merging(a) { _, given in given }
            bEnvironment = environment
        }

        /// A's admin key: the one its environment gives (several nodes share one), or the one
        /// it made in its data directory.
        var aAdminKey: String { aEnvironment["ISLET_SERVER_ADMIN_KEY"] ?? aData.adminKey }

        var appOnA: IsletClient { IsletClient(server: a.url, key: keyOnA, http: http) }
        var appOnB: IsletClient { IsletClient(server: b.url, key: keyOnB, http: http) }

        /// Starts B and A, creates the app on both, registers a provider key on B ("Apple")
        /// and A's credentials for it, and starts the phone app.
        func start() async throws {
            b = try await ServerProcess(data: bData, environment: bEnvironment)
            a = try await ServerProcess(data: aData, environment: aEnvironment)
            keyOnA = try await IsletClient(server: a.url, key: aAdminKey, http: http).createApp(bundleId: bundleId).apiKey
            keyOnB = try await IsletClient(server: b.url, key: bData.adminKey, http: http).createApp(bundleId: bundleId).apiKey
            clientKeyOnA = try await appOnA.createClientKey(bundleId: bundleId, name: "the phone app").key
            if let signedInUser {
                let secret = try await appOnA.replaceUserVerificationSecret(bundleId: bundleId).secret
                userSignature = Array(HMAC<SHA256>.authenticationCode(for: Data(signedInUser.utf8), using: SymmetricKey(data: Data(secret.utf8)))).hexEncoded
            }
            try await registerKeyOnB()
            try await registerCredentialOnA()
            try await startPhoneApp()
            phone = try await eventually("the phone app registers with A and its push-to-start token reaches A") {
                try await self.appOnA.installations().first { $0.tokens.contains { $0.kind == .pushToStart && $0.retiredAt == nil } }?.installation.id
            }
        }

        /// "Apple" learns the app's key, as the developer site does when a key is made.
        func registerKeyOnB(_ key: P256.Signing.PrivateKey? = nil, id keyId: String = "KEY1234567") async throws {
            _ = try await IsletClient(server: b.url, key: bData.adminKey, http: http).addProviderKey(
                bundleId: bundleId, keyId: keyId, teamId: "TEAM123456", publicKey: (key ?? providerKey).publicKey.pemRepresentation
            )
        }

        /// A's credentials for the app, sending to B.
        func registerCredentialOnA(_ key: P256.Signing.PrivateKey? = nil, id keyId: String = "KEY1234567") async throws {
            _ = try await IsletClient(server: a.url, key: aAdminKey, http: http).putDeliveryCredential(
                bundleId: bundleId,
                DeliveryCredentialBody(
                    teamId: "TEAM123456", keyId: keyId, privateKey: (key ?? providerKey).pemRepresentation, environment: .development,
                    url: "https://127.0.0.1:\(b.apnsPort!)",
                    caCertificate: try String(contentsOf: bData.url.appendingPathComponent("tls/ca.pem"), encoding: .utf8)
                )
            )
        }

        func startPhoneApp() async throws {
            let binary = isletBinary.deletingLastPathComponent().appendingPathComponent("phone-app")
            #expect(FileManager.default.isExecutableFile(atPath: binary.path), "build the phone app first: swift build")
            var environment = [
                "ISLET_URL": b.url, "ISLET_KEY": keyOnB, "BACKEND_URL": a.url, "CLIENT_KEY": clientKeyOnA, "BUNDLE_ID": bundleId,
                "ENVIRONMENT": "development", "STORE": phoneStore.path,
            ]
            if let signedInUser, let userSignature { (environment["USER_ID"], environment["USER_SIGNATURE"]) = (signedInUser, userSignature) }
            phoneApp = try await ChildProcess(binary, environment: environment)
        }

        /// Kills a server with SIGKILL and starts it again on the same ports and data.
        func restart(_ which: KeyPath<Loop, ServerProcess?>, kill signal: Int32 = SIGKILL) async throws {
            let old = self[keyPath: which]!
            await old.stop(signal: signal)
            let isA = which == \Loop.a
            let restarted = try await ServerProcess(
                data: isA ? aData : bData, port: old.port,
                environment: (isA ? aEnvironment : bEnvironment).merging(["ISLET_APNS_PORT": "\(old.apnsPort!)"]) { _, new in new }
            )
            if isA { a = restarted } else { b = restarted }
        }

        func stop() async {
            phoneApp?.kill()
            if let a { await a.stop(signal: SIGTERM) }
            if let b { await b.stop(signal: SIGTERM) }
            try? await http.shutdown()
        }

        /// A second phone: device `second` on B, its push-to-start token reported to A by hand as
        /// `phone-2`'s.
        func addSecondPhone() async throws {
            let bAdmin = IsletClient(server: b.url, key: bData.adminKey, http: http)
            _ = try await bAdmin.createDevice(id: "second")
            let token = try #require(try await bAdmin.settings(device: "second").first { $0.bundleId == DeliveryLoopTests.bundleId }?.pushToStartToken)
            _ = try await appOnA.registerPushToStartToken(token, environment: .development, device: "phone-2", attributesType: "DeliveryAttributes")
        }

        /// Starts an activity on A for the phone and waits until B shows it.
        func startActivity(order: String, status: String = "confirmed") async throws -> (a: Activity, b: Activity) {
            let onA = try await appOnA.start(ActivityRequest(
                attributesType: "DeliveryAttributes", attributes: ["orderNumber": .string(order)],
                content: ActivityContent(state: ["status": .string(status)]), alert: Alert(title: "Order \(order)", body: "Confirmed"),
                deviceId: phone
            ))
            let onB = try await eventually("activity \(onA.id) appears on B") {
                try await self.appOnB.activities().first { $0.attributes["islet"] == .string(onA.id) }
            }
            // The phone app reports the new activity's update token to A.
            _ = try await eventually("the update token of \(onA.id) reaches A") {
                try await self.appOnA.phone(phone).tokens.first { $0.kind == .update && $0.activityId == onA.id && $0.retiredAt == nil }
            }
            return (onA, onB)
        }

        /// A's `/healthz` delivery member: what anyone may read.
        func deliveryHealth() async throws -> JSONValue {
            let response = try await http.get(url: a.url + "/healthz").get()
            let text = response.body.map { String(buffer: $0) } ?? ""
            return try WireFormat.decoder().decode(JSONValue.self, from: Data(text.utf8))["delivery"] ?? .null
        }

        /// The delivery member of A's overview, read with A's admin key: which app, and why.
        func deliveryOverview() async throws -> JSONValue {
            var request = HTTPClientRequest(url: a.url + "/v1/overview")
            request.headers.add(name: "Authorization", value: "Bearer \(aAdminKey)")
            let response = try await http.execute(request, timeout: .seconds(10))
            let body = try await response.body.collect(upTo: 1 << 20)
            return try WireFormat.decoder().decode(JSONValue.self, from: Data(String(buffer: body).utf8))["delivery"] ?? .null
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

    func withLoop(
        a: [String: String] = [:], b environment: [String: String] = [:], user: String? = nil, _ body: (Loop) async throws -> Void
    ) async throws {
        let loop = Loop(a: a, b: environment)
        loop.signedInUser = user
        do {
            try await loop.start()
            try await body(loop)
        } catch {
            Issue.record("the phone app said:\n\(loop.phoneApp?.output ?? "")")
            if let a = loop.a { Issue.record("A said, last:\n\(a.output.suffix(3_000))") }
            await loop.stop()
            throw error
        }
        await loop.stop()
    }

    /// Whether `seen` follows `order`: some may be skipped (a newer change replaced them before
    /// they were sent), and one may come twice in a row (a request whose answer was lost — a
    /// connection closed, a sender killed — is sent again; the phone applies an equal timestamp).
    static func inOrder(_ seen: [String], _ order: [String]) -> Bool {
        let positions = seen.compactMap { order.firstIndex(of: $0) }
        return positions.count == seen.count && positions == positions.sorted()
    }

    @Test func theLoopStartsUpdatesAndEndsAnActivityOnThePhone() async throws {
        try await withLoop { loop in
            let (onA, onB) = try await loop.startActivity(order: "42")
            #expect(onB.attributesType == "DeliveryAttributes")
            #expect(onB.attributes == ["orderNumber": "42", "islet": .string(onA.id)])
            #expect(onB.content.state == ["status": "confirmed"])
            for status in ["preparing", "onTheWay", "arriving"] { try await loop.update(onA.id, status) }
            _ = try await loop.appOnA.end(onA.id, EndRequest(content: ActivityContent(state: ["status": "delivered"])))
            try await loop.waitOnB(onB.id, status: "delivered", state: .ended)
            let seen = try await loop.statusesOnB(onB.id)
            #expect(seen.first == "confirmed" && seen.last == "delivered")
            #expect(Self.inOrder(seen, ["confirmed", "preparing", "onTheWay", "arriving", "delivered"]), "\(seen)")
            // A's log: every request with its apns-id and Apple's status.
            let log = try await loop.appOnA.deliveries(onA.id)
            let sent = log.filter { $0.report.status != nil }
            #expect(sent.first?.report.event == "start" && sent.last?.report.event == "end")
            #expect(sent.allSatisfy { $0.report.status == 200 && $0.report.apnsId != nil && $0.report.outcome == .delivered })
            #expect(log.allSatisfy { [.queued, .delivered, .held, .coalesced].contains($0.report.outcome) }, "\(log.map(\.report.outcome))")
            #expect(Set(sent.compactMap(\.report.apnsId)).count == sent.count)
        }
    }

    @Test func everyChangeArrivesInOrderThroughApplesFailures() async throws {
        try await withLoop(b: ["ISLET_APNS_FAULTS": "500=0.1, 503=0.05, 429=0.05, close=0.02"]) { loop in
            var activities: [(a: Activity, b: Activity)] = []
            for order in 1...4 { activities.append(try await loop.startActivity(order: "\(order)")) }
            for step in 1...15 {
                for (onA, _) in activities { try await loop.update(onA.id, "step \(step)") }
            }
            for (onA, _) in activities {
                _ = try await loop.appOnA.end(onA.id, EndRequest(content: ActivityContent(state: ["status": "done"])))
            }
            var retries = 0
            for (onA, onB) in activities {
                try await loop.waitOnB(onB.id, status: "done", state: .ended, within: 60)
                let seen = try await loop.statusesOnB(onB.id)
                #expect(Self.inOrder(seen, ["confirmed"] + (1...15).map { "step \($0)" } + ["done"]), "out of order on B: \(seen)")
                retries += try await loop.appOnA.deliveries(onA.id).filter { $0.report.outcome == .retrying }.count
            }
            // With a fifth of the requests failing, some were retried, and the log says so.
            #expect(retries > 0)
        }
    }

    @Test func aKilledBackendDeliversEveryAcknowledgedChangeAfterItsRestart() async throws {
        try await withLoop { loop in
            var activities: [(a: Activity, b: Activity)] = []
            for order in 1...3 { activities.append(try await loop.startActivity(order: "\(order)")) }
            // A stream of updates; each acknowledged one is the latest known state.
            var last: [ActivityID: String] = [:]
            for step in 1...40 {
                for (onA, _) in activities {
                    try await loop.update(onA.id, "step \(step)")
                    last[onA.id] = "step \(step)"
                }
                if step == 20 { try await loop.restart(\.a) }
            }
            for (onA, onB) in activities {
                do {
                    try await loop.waitOnB(onB.id, status: last[onA.id]!, within: 60)
                } catch {
                    let log = try await loop.appOnA.deliveries(onA.id).suffix(8).map { "\($0.report)" }.joined(separator: "\n")
                    Issue.record("A's log, last lines:\n\(log)\nB: \(try await loop.statusesOnB(onB.id).suffix(5))")
                    throw error
                }
                let seen = try await loop.statusesOnB(onB.id)
                #expect(Self.inOrder(seen, ["confirmed"] + (1...40).map { "step \($0)" }), "out of order on B: \(seen)")
            }
        }
    }

    /// Issue 42: A killed with SIGKILL under full load — a client per activity updating as fast as A
    /// answers, the sender's rounds and B's answers in flight — loses no acknowledged change:
    /// after its restart every activity's last state reaches B, in order, and no delivery is
    /// written down as delivered twice. A change the kill cut before its answer is sent again
    /// by its client, so B may see one state twice in a row, never out of order.
    @Test func aBackendKilledUnderFullLoadLosesNoAcknowledgedChange() async throws {
        try await withLoop { loop in
            var activities: [(a: Activity, b: Activity)] = []
            // Five: the most a phone has live for one app.
            for order in 1...5 { activities.append(try await loop.startActivity(order: "\(order)")) }
            // The clients keep A's address: the restarted A listens on the same port.
            let app = IsletClient(server: loop.a.url, key: loop.keyOnA, http: loop.http)
            let steps = 100
            let acknowledged = Acknowledged()
            let ids = activities.map(\.a.id)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await Self.update(ids, steps: steps, through: app, counting: acknowledged) }
                // Half-way through, under the load, A dies.
                _ = try await eventually("half the updates acknowledged") {
                    acknowledged.value.load(ordering: .relaxed) >= ids.count * steps / 2 ? true : nil
                }
                try await loop.restart(\.a)
                try await group.waitForAll()
            }
            for (onA, onB) in activities {
                try await loop.waitOnB(onB.id, status: "step \(steps)", within: 120)
                var seen: [String] = []
                for status in try await loop.statusesOnB(onB.id) where seen.last != status { seen.append(status) }
                #expect(Self.inOrder(seen, ["confirmed"] + (1...steps).map { "step \($0)" }), "out of order on B: \(seen)")
                let delivered = try await loop.appOnA.deliveries(onA.id).filter { $0.report.outcome == .delivered }.map(\.report.delivery)
                #expect(Set(delivered).count == delivered.count, "a delivery written down as delivered twice: \(delivered)")
            }
        }
    }

    /// Updates acknowledged so far, across the clients of `update`.
    final class Acknowledged: Sendable { let value = Atomic<Int>(0) }

    /// A client per activity, each updating its activity to "step 1" … "step `steps`" as fast as
    /// A answers: each update until acknowledged (while A is down, it fails and is made again).
    static func update(_ ids: [ActivityID], steps: Int, through app: IsletClient, counting acknowledged: Acknowledged) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for id in ids {
                group.addTask {
                    for step in 1...steps {
                        var attempts = 0
                        while true {
                            do {
                                _ = try await app.update(id, ContentUpdate(content: ActivityContent(state: ["status": .string("step \(step)")])))
                                acknowledged.value.add(1, ordering: .relaxed)
                                break
                            } catch {
                                attempts += 1
                                if attempts > 1_200 { throw error }
                                try await Task.sleep(for: .milliseconds(50))
                            }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    /// On PostgreSQL, a change locks its activity and then its deliveries; a sender's round
    /// locks deliveries and never an activity (`phoneActivityForSending`). Had the round locked
    /// activities too — it did, to read an activity's phone and to log — a round and a change
    /// waiting for each other deadlocked, and PostgreSQL broke each cycle after a second
    /// (`islet-bench delivery --postgres`: p99 from commit to Apple 4–13 s). Under the load of a
    /// client per activity, no deadlock.
    @Test(.enabled(if: PostgresServer.available, "needs PostgreSQL"))
    func onPostgreSQLTheSenderNeverDeadlocksWithTheChangesItSends() async throws {
        let database = try await PostgresServer.newDatabase()
        try await withLoop(a: ["ISLET_STORE": database, "ISLET_SERVER_ADMIN_KEY": "islet-delivery-cluster-admin-key-01"]) { loop in
            var activities: [(a: Activity, b: Activity)] = []
            for order in 1...5 { activities.append(try await loop.startActivity(order: "\(order)")) }
            let steps = 100
            try await Self.update(activities.map(\.a.id), steps: steps, through: loop.appOnA, counting: Acknowledged())
            for (_, onB) in activities { try await loop.waitOnB(onB.id, status: "step \(steps)", within: 120) }
            let deadlocks = try await PostgresServer.rows("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()", in: database)
            #expect(deadlocks == ["0"], "PostgreSQL broke \(deadlocks) deadlocks")
        }
    }

    /// A round of the sender (docs/delivery.md, "The outbox") claims many deliveries at once: A
    /// killed with a round's requests in flight — Apple (B) stopped, so none is answered — sends
    /// them again after its restart, and each activity's latest state arrives in order, each
    /// delivery written down as delivered once.
    @Test func aSenderKilledMidRoundDeliversTheLatestStateOnceInOrder() async throws {
        try await withLoop { loop in
            var activities: [(a: Activity, b: Activity)] = []
            for order in 1...5 { activities.append(try await loop.startActivity(order: "\(order)")) }
            // B stops answering: what A claims next stays in flight, held under its lease.
            kill(loop.b.pid, SIGSTOP)
            var resumed = false
            defer { if !resumed { kill(loop.b.pid, SIGCONT) } }
            for step in 1...3 {
                for (onA, _) in activities { try await loop.update(onA.id, "step \(step)") }
            }
            let database = try DatabaseQueue(path: loop.aData.url.appendingPathComponent("islet.sqlite").path)
            let inFlight = try await eventually("A holds a round of deliveries in flight") {
                let sending = try await database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM delivery WHERE state = 'sending'") ?? 0 }
                return sending >= activities.count ? sending : nil
            }
            #expect(inFlight >= activities.count)
            try database.close()
            try await loop.restart(\.a)
            kill(loop.b.pid, SIGCONT)
            resumed = true
            for step in 4...5 {
                for (onA, _) in activities { try await loop.update(onA.id, "step \(step)") }
            }
            for (onA, onB) in activities {
                try await loop.waitOnB(onB.id, status: "step 5", within: 60)
                // In order; a request A sent before it died may have reached B too, so one state
                // may show twice in a row, never out of order.
                var seen: [String] = []
                for status in try await loop.statusesOnB(onB.id) where seen.last != status { seen.append(status) }
                #expect(Self.inOrder(seen, ["confirmed"] + (1...5).map { "step \($0)" }), "out of order on B: \(seen)")
                let delivered = try await loop.appOnA.deliveries(onA.id).filter { $0.report.outcome == .delivered }.map(\.report.delivery)
                #expect(Set(delivered).count == delivered.count, "a delivery written down as delivered twice: \(delivered)")
            }
        }
    }

    /// On several nodes (docs/cluster.md): a node killed while sending holds its delivery until
    /// the lease runs out, not forever; then another node sends it, once.
    @Test(.enabled(if: PostgresServer.available, "needs PostgreSQL"))
    func aDeadNodesDeliveryIsSentByAnotherOnceItsLeaseRunsOut() async throws {
        let database = try await PostgresServer.newDatabase()
        try await withLoop(a: [
            "ISLET_STORE": database, "ISLET_SERVER_ADMIN_KEY": "islet-delivery-cluster-admin-key-01", "ISLET_DELIVERY_LEASE": "6s",
        ]) { loop in
            let (onA, onB) = try await loop.startActivity(order: "21")
            // "Apple" stops answering: A's request waits, and A holds the delivery.
            kill(loop.b.pid, SIGSTOP)
            defer { kill(loop.b.pid, SIGCONT) }
            try await loop.update(onA.id, "onTheWay")
            let leaseEnds = try await eventually("A holds the update") {
                try await PostgresServer.rows("SELECT leaseUntil FROM delivery WHERE state = 'sending' AND event = 'update'", in: database).first.flatMap(Double.init)
            }
            await loop.a.stop(signal: SIGKILL)
            // Another node on the database, and "Apple" back.
            let nodeData = DataDirectory()
            loop.a = try await ServerProcess(data: nodeData, environment: loop.aEnvironment)
            kill(loop.b.pid, SIGCONT)
            // (The dead node's request may reach "Apple" too, once it reads again: Apple may see
            // a request twice, and the phone applies the equal timestamp again, changing nothing.)
            _ = try await eventually("another node sends the update", within: 30) {
                try await loop.appOnA.deliveries(onA.id).first { $0.report.status != nil && $0.report.event == "update" }
            }
            try await loop.waitOnB(onB.id, status: "onTheWay")
            let sent = try await loop.appOnA.deliveries(onA.id).filter { $0.report.status != nil && $0.report.event == "update" }
            #expect(sent.count == 1 && sent.first?.report.outcome == .delivered, "\(sent.map(\.report))")
            for line in sent {
                #expect(line.time.timeIntervalSince1970 >= leaseEnds, "sent \(leaseEnds - line.time.timeIntervalSince1970) s before the dead node's lease ran out")
            }
            #expect(await loop.a.stop(signal: SIGTERM) == 0)
            loop.a = nil
        }
    }

    @Test func whileApplesSideIsDownChangesAreAcknowledgedAndDeliveredWhenItReturns() async throws {
        try await withLoop { loop in
            let (onA, onB) = try await loop.startActivity(order: "7")
            await loop.b.stop(signal: SIGKILL)
            for status in ["preparing", "onTheWay"] { try await loop.update(onA.id, status) }
            // Not delivered, and the log says it is being retried.
            _ = try await eventually("a retry in A's log") {
                try await loop.appOnA.deliveries(onA.id).first { $0.report.outcome == .retrying && $0.report.status == nil }
            }
            // A keeps taking changes and says delivery is degraded, and why. (Read until it says
            // so: between two attempts the delivery is being sent, and then it waits for none.)
            let health = try await eventually("A says delivery is degraded") {
                let health = try await loop.deliveryHealth()
                return health["status"] == "degraded" ? health : nil
            }
            #expect(health["reason"]?.stringValue?.contains("to be tried again") == true, "\(health)")
            let old = loop.b!
            loop.b = try await ServerProcess(
                data: loop.bData, port: old.port, environment: ["ISLET_APNS_PORT": "\(old.apnsPort!)"]
            )
            try await loop.waitOnB(onB.id, status: "onTheWay", within: 60)
            _ = try await eventually("delivery healthy again") { try await loop.deliveryHealth()["status"] == "ok" ? true : nil }
        }
    }

    @Test func aProviderTokenRefusedTwiceHoldsDeliveryUntilTheCredentialIsRegisteredAgain() async throws {
        try await withLoop { loop in
            let (onA, onB) = try await loop.startActivity(order: "13")
            // The key is revoked at "Apple": every token it signs is refused from now on.
            try await IsletClient(server: loop.b.url, key: loop.bData.adminKey, http: loop.http)
                .deleteProviderKey(bundleId: Self.bundleId, keyId: "KEY1234567")
            try await loop.update(onA.id, "preparing")
            let held = try await eventually("the refusal in A's log") {
                try await loop.appOnA.deliveries(onA.id).first { $0.report.outcome == .held && $0.report.status == 403 }
            }
            #expect(held.report.reason == "InvalidProviderToken")
            #expect(held.report.note?.contains("the provider token was signed again") == true, "\(held.report.note ?? "")")
            let health = try await loop.deliveryHealth()
            #expect(health["status"] == "degraded")
            // /healthz answers anyone: how many apps, not which or why; the overview says.
            #expect(health["reason"] == "the delivery credentials of 1 app cannot be used; GET /v1/overview (with a key) says which and why", "\(health)")
            let overview = try await loop.deliveryOverview()
            #expect(overview["reason"]?.stringValue?.contains("\(Self.bundleId) (development): key KEY1234567: Apple refused the provider token") == true, "\(overview)")
            // Changes are still taken; they wait.
            try await loop.update(onA.id, "onTheWay")
            #expect(try await loop.appOnB.activity(onB.id).content.state["status"] == "confirmed")
            // A new key, as the developer makes one after a revocation, registered at "Apple" and
            // as A's credentials: what waited goes.
            let replacement = P256.Signing.PrivateKey()
            try await loop.registerKeyOnB(replacement, id: "KEY7654321")
            try await loop.registerCredentialOnA(replacement, id: "KEY7654321")
            try await loop.waitOnB(onB.id, status: "onTheWay")
            #expect(try await loop.deliveryHealth()["status"] == "ok")
        }
    }

    @Test func aRetiredTokenIsNotSentToAgain() async throws {
        try await withLoop { loop in
            let (onA, onB) = try await loop.startActivity(order: "9")
            // The app is not running, so it reports nothing (it would: `phone-report`); the
            // person dismisses the activity on the phone, and Apple answers 410 from then on.
            loop.phoneApp?.kill()
            _ = try await IsletClient(server: loop.b.url, key: loop.bData.adminKey, http: loop.http)
                .end(onB.id, EndRequest(dismissalPolicy: .immediate))
            try await loop.update(onA.id, "preparing")
            let retired = try await eventually("410 in A's log") {
                try await loop.appOnA.deliveries(onA.id).first { $0.report.outcome == .tokenRetired }
            }
            #expect(retired.report.status == 410)
            #expect(retired.report.reason == "Unregistered")
            let phone = try await loop.appOnA.phone(loop.phone)
            #expect(phone.tokens.first { $0.kind == .update && $0.activityId == onA.id }?.retiredAt != nil)
            // Nothing more goes to it.
            try await loop.update(onA.id, "onTheWay")
            let dropped = try await loop.appOnA.deliveries(onA.id).last
            #expect(dropped?.report.outcome == .dropped)
            #expect(dropped?.report.note == "not sent: Apple retired this activity's token on the phone")
        }
    }

    @Test func aRotatedPushToStartTokenReplacesTheOld() async throws {
        try await withLoop { loop in
            let before = try await loop.appOnA.phone(loop.phone).tokens.first { $0.kind == .pushToStart && $0.retiredAt == nil }!
            // iOS rotates the token (B, the phone, does): the app reports the new one.
            _ = try await IsletClient(server: loop.b.url, key: loop.bData.adminKey, http: loop.http)
                .rotatePushToStartToken(device: "default", bundleId: Self.bundleId)
            let after = try await eventually("the rotated token reaches A") {
                try await loop.appOnA.phone(loop.phone).tokens.first { $0.kind == .pushToStart && $0.retiredAt == nil && $0.token != before.token }
            }
            let tokens = try await loop.appOnA.phone(loop.phone).tokens.filter { $0.kind == .pushToStart }
            #expect(tokens.filter { $0.retiredAt == nil }.map(\.token) == [after.token])
            #expect(tokens.first { $0.token == before.token }?.retiredReason == "replaced")
            // A start goes to the new token and reaches the phone.
            _ = try await loop.startActivity(order: "11")
        }
    }

    @Test func oneBroadcastReachesEveryPhoneOnTheChannelInOneRequest() async throws {
        try await withLoop { loop in
            try await loop.addSecondPhone()
            // The channel is made at Apple (B) first, with Apple's id.
            let channel = try await loop.appOnA.createChannel(bundleId: Self.bundleId, storagePolicy: 0)
            #expect(channel.environment == .development)
            #expect(try await loop.appOnB.channels(bundleId: Self.bundleId).map(\.id) == [channel.id])
            var onB: [Activity] = []
            for phone in [loop.phone, "phone-2"] {
                let onA = try await loop.appOnA.start(ActivityRequest(
                    attributesType: "DeliveryAttributes", attributes: ["orderNumber": "20"], content: ActivityContent(state: ["status": "confirmed"]),
                    pushType: .channel(channel.id), alert: Alert(title: "Order 20", body: ""), deviceId: phone
                ))
                onB.append(try await eventually("\(onA.id) appears on B") {
                    try await loop.appOnB.activities().first { $0.attributes["islet"] == .string(onA.id) }
                })
            }
            #expect(Set(onB.map(\.deviceId)) == ["default", "second"])
            #expect(onB.allSatisfy { $0.pushType == .channel(channel.id) })
            _ = try await loop.appOnA.broadcast(
                bundleId: Self.bundleId, channelId: channel.id, BroadcastBody(.update(ContentUpdate(content: ActivityContent(state: ["status": "onTheWay"]))))
            )
            for activity in onB { try await loop.waitOnB(activity.id, status: "onTheWay") }
            // One request: the broadcast's line is the same delivery on both activities on A.
            let lines = try await loop.appOnA.activities().asyncMap { try await loop.appOnA.deliveries($0.id) }
                .map { $0.filter { $0.report.target == "channel \(channel.id)" && $0.report.status == 200 } }
            #expect(lines.map(\.count) == [1, 1])
            #expect(Set(lines.flatMap { $0.map(\.report.delivery) }).count == 1)
            // Deleting it on A deletes it at Apple too.
            try await loop.appOnA.deleteChannel(bundleId: Self.bundleId, id: channel.id)
            #expect(try await loop.appOnB.channels(bundleId: Self.bundleId).isEmpty)
        }
    }

    /// A send whose phones are exactly a channel's goes as one broadcast, one request to Apple
    /// for both cards; a send to fewer of them cannot reach a card that has no token of its own,
    /// and says so in its targets (docs/audiences.md).
    @Test func aSendToEveryPhoneOfAChannelGoesAsOneBroadcast() async throws {
        try await withLoop { loop in
            try await loop.addSecondPhone()
            let channel = try await loop.appOnA.createChannel(bundleId: Self.bundleId, storagePolicy: 0)
            let phones = [loop.phone, "phone-2"]
            func done(_ body: SendBody) async throws -> (Send, [SendTarget]) {
                let made = try await loop.appOnA.createSend(bundleId: Self.bundleId, body)
                let send = try await eventually("send \(made.id) is done") {
                    let send = try await loop.appOnA.send(bundleId: Self.bundleId, id: made.id)
                    return send.status == .done ? send : nil
                }
                return (send, try await loop.appOnA.sendTargets(bundleId: Self.bundleId, id: made.id))
            }
            let (start, started) = try await done(SendBody(
                action: .start, key: "order-30", audience: .devices(phones), attributesType: "DeliveryAttributes", attributes: ["orderNumber": "30"],
                content: ActivityContent(state: ["status": "confirmed"]), alert: Alert(title: "Order 30", body: ""), pushType: .channel(channel.id)
            ))
            #expect(start.counts.started == 2)
            var onB: [Activity] = []
            for id in started.compactMap(\.activityId) {
                onB.append(try await eventually("\(id) appears on B") { try await loop.appOnB.activities().first { $0.attributes["islet"] == .string(id) } })
            }
            #expect(onB.allSatisfy { $0.pushType == .channel(channel.id) })

            let (update, updated) = try await done(SendBody(
                action: .update, key: "order-30", audience: .devices(phones), content: ActivityContent(state: ["status": "onTheWay"])
            ))
            #expect(update.counts.updated == 2)
            #expect(updated.allSatisfy { $0.reason == "by one broadcast on channel \(channel.id)" })
            for activity in onB { try await loop.waitOnB(activity.id, status: "onTheWay") }
            let lines = try await started.compactMap(\.activityId).asyncMap { try await loop.appOnA.deliveries($0) }
                .map { $0.filter { $0.report.target == "channel \(channel.id)" && $0.report.status == 200 } }
            #expect(lines.map(\.count) == [1, 1], "one request to Apple, on both cards' logs")
            #expect(Set(lines.flatMap { $0.map(\.report.delivery) }).count == 1)

            let (narrow, narrowTargets) = try await done(SendBody(
                action: .update, key: "order-30", audience: .devices([loop.phone]), content: ActivityContent(state: ["status": "delivered"])
            ))
            #expect(narrow.counts.failed == 1)
            #expect(narrowTargets.first?.reason?.contains("joined channel \(channel.id), whose changes reach the phone only by broadcast") == true)
        }
    }

    @Test func badDeliveryInputIsRefusedWithAReasonAndChangesNothing() async throws {
        try await withLoop { loop in
            let admin = IsletClient(server: loop.a.url, key: loop.aData.adminKey, http: loop.http)
            func reason(_ body: () async throws -> Void) async -> String? {
                do {
                    try await body()
                    return nil
                } catch ClientError.refused(_, let error) {
                    return "\(error.reason.rawValue): \(error.message)"
                } catch {
                    return "\(error)"
                }
            }
            let before = try await admin.deliveryCredentials(bundleId: Self.bundleId)
            let base = DeliveryCredentialBody(teamId: "TEAM123456", keyId: "KEY1234567", privateKey: loop.providerKey.pemRepresentation, environment: .development)
            // A public key where the private one goes, a key that is not PEM, an unknown environment.
            var publicOnly = base
            publicOnly.privateKey = loop.providerKey.publicKey.pemRepresentation
            var notPEM = base
            notPEM.privateKey = "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----"
            for body in [publicOnly, notPEM] {
                let refused = await reason { _ = try await admin.putDeliveryCredential(bundleId: Self.bundleId, body) }
                #expect(refused?.hasPrefix("invalidRequest") == true, "\(refused ?? "accepted")")
            }
            // Addresses the sender could never use: a port beyond 16 bits trapped inside the HTTP
            // client (the process, and every restart after it); a user, a fragment or a query were
            // taken and then ignored or refused at every send, for hours.
            let refusedURLs: [(String, String)] = [
                ("https://127.0.0.1:99999", "port must be a number from 1 to 65535"), ("https://127.0.0.1:65536", "port must be"),
                ("https://user:password@127.0.0.1:\(loop.b.apnsPort!)", "user name or password"),
                ("https://127.0.0.1:\(loop.b.apnsPort!)#fragment", "fragment"), ("https://127.0.0.1:\(loop.b.apnsPort!)?q", "query"),
                ("http://127.0.0.1:\(loop.b.apnsPort!)", "https address"),
            ]
            for (url, why) in refusedURLs {
                var body = base
                body.url = url
                let refused = await reason { _ = try await admin.putDeliveryCredential(bundleId: Self.bundleId, body) }
                #expect(refused?.hasPrefix("invalidRequest") == true && refused?.contains(why) == true, "\(url): \(refused ?? "accepted")")
            }
            // An authority that is junk between its markers, or another kind of PEM block.
            for pem in ["-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n",
                "-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n", base.privateKey, "no PEM at all"]
            {
                var body = base
                body.url = "https://127.0.0.1:\(loop.b.apnsPort!)"
                body.caCertificate = pem
                let refused = await reason { _ = try await admin.putDeliveryCredential(bundleId: Self.bundleId, body) }
                #expect(refused?.hasPrefix("invalidRequest") == true && refused?.contains("caCertificate") == true, "\(refused ?? "accepted")")
            }
            var request = HTTPClientRequest(url: loop.a.url + "/v1/apps/\(Self.bundleId)/delivery")
            request.method = .PUT
            request.headers.add(name: "Authorization", value: "Bearer \(loop.aData.adminKey)")
            request.body = .bytes(ByteBuffer(string: #"{"teamId": "TEAM123456", "keyId": "KEY1234567", "privateKey": "x", "environment": "staging"}"#))
            let staging = try await loop.http.execute(request, timeout: .seconds(10))
            #expect(staging.status == .badRequest)
            #expect(try await admin.deliveryCredentials(bundleId: Self.bundleId) == before)

            // Tokens that are not a token.
            for token in ["xyz", String(repeating: "a", count: 63), String(repeating: "a", count: 62), String(repeating: "ab", count: 101)] {
                let refused = await reason {
                    _ = try await loop.appOnA.registerPushToStartToken(token, environment: .development, device: "phone-9", attributesType: "DeliveryAttributes")
                }
                #expect(refused?.hasPrefix("invalidRequest") == true, "\(token.count): \(refused ?? "accepted")")
            }
            #expect(await reason { _ = try await loop.appOnA.phone("phone-9") }?.hasPrefix("deviceNotFound") == true)

            // Attributes that cannot carry Islet's reference: the start is refused, nothing written.
            let count = try await loop.appOnA.activities().count
            let named = await reason {
                _ = try await loop.appOnA.start(ActivityRequest(
                    attributesType: "DeliveryAttributes", attributes: ["orderNumber": "1", "islet": "mine"],
                    content: ActivityContent(state: ["status": "confirmed"]), alert: Alert(title: "1", body: ""), deviceId: loop.phone
                ))
            }
            #expect(named?.hasPrefix("invalidRequest") == true && named?.contains("attributes.islet") == true, "\(named ?? "accepted")")
            _ = try await loop.appOnA.putActivityType(
                bundleId: Self.bundleId, name: "DeliveryAttributes", attributes: ["orderNumber": "string", "islet": "number"], contentState: nil
            )
            let shaped = await reason {
                _ = try await loop.appOnA.start(ActivityRequest(
                    attributesType: "DeliveryAttributes", attributes: ["orderNumber": "2"],
                    content: ActivityContent(state: ["status": "confirmed"]), alert: Alert(title: "2", body: ""), deviceId: loop.phone
                ))
            }
            #expect(shaped?.hasPrefix("attributesMismatch") == true, "\(shaped ?? "accepted")")
            #expect(try await loop.appOnA.activities().count == count)
        }
    }

    /// A credential stored before its address was checked (here `:99999`, as an earlier version
    /// took it) trapped the server at its first delivery, and at every start after it, before
    /// the API answered. Now the server runs, the API answers, the delivery is held saying why,
    /// and registering the credential again sends what waited.
    @Test func aStoredCredentialThatCannotBeUsedNeverStopsTheServer() async throws {
        try await withLoop { loop in
            let (onA, onB) = try await loop.startActivity(order: "27")
            await loop.a.stop(signal: SIGTERM)
            let database = try DatabaseQueue(path: loop.aData.url.appendingPathComponent("islet.sqlite").path)
            try await database.write { db in
                try db.execute(sql: "UPDATE deliveryCredential SET url = 'https://127.0.0.1:99999'")
            }
            try database.close()
            for round in 1...2 {
                try await loop.restart(\.a, kill: SIGTERM)
                try await loop.update(onA.id, "preparing \(round)")
                let held = try await eventually("round \(round): the delivery held with the reason") {
                    try await loop.appOnA.deliveries(onA.id).last { $0.report.outcome == .held && $0.report.note?.contains("65535") == true }
                }
                #expect(held.report.note?.contains("the credential cannot be used") == true, "\(held.report.note ?? "")")
                let health = try await loop.deliveryHealth()
                #expect(health["status"] == "degraded" && health["reason"]?.stringValue?.contains("65535") == false, "\(health)")
                #expect(try await loop.deliveryOverview()["reason"]?.stringValue?.contains("65535") == true)
            }
            // The operator reaches the API and puts it right: what waited goes.
            try await loop.registerCredentialOnA()
            try await loop.waitOnB(onB.id, status: "preparing 2")
            _ = try await eventually("A's delivery health back to ok") { try await loop.deliveryHealth()["status"] == "ok" ? true : nil }
        }
    }

    @Test func aTokenThatNeverWorkedSaysTheEnvironmentMayBeTheCause() async throws {
        try await withLoop { loop in
            let unknown = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
            _ = try await loop.appOnA.registerPushToStartToken(unknown, environment: .development, device: "phone-2", attributesType: "DeliveryAttributes")
            let onA = try await loop.appOnA.start(ActivityRequest(
                attributesType: "DeliveryAttributes", attributes: ["orderNumber": "12"], content: ActivityContent(state: ["status": "confirmed"]),
                alert: Alert(title: "Order 12", body: ""), deviceId: "phone-2"
            ))
            let failed = try await eventually("BadDeviceToken in A's log") {
                try await loop.appOnA.deliveries(onA.id).first { $0.report.reason == "BadDeviceToken" }
            }
            #expect(failed.report.outcome == .failed)
            #expect(failed.report.note?.contains("is the app built for production (TestFlight, App Store)?") == true, "\(failed.report.note ?? "")")
        }
    }
}

extension IsletClient {
    /// A phone's activity once its content state is `status` (and, if asked, its state `state`).
    @discardableResult
    func waitFor(_ id: ActivityID, status: String, state: ActivityState? = nil, within seconds: Double = 30) async throws -> Activity {
        try await eventually("\(id) on B reaches \(status)", within: seconds) {
            let activity = try await self.activity(id)
            guard activity.content.state["status"] == .string(status), state.map({ activity.state == $0 }) ?? true else { return nil }
            return activity
        }
    }

    /// The statuses a phone applied to an activity, in order.
    func statuses(_ id: ActivityID) async throws -> [String] {
        try await history(id).compactMap { event -> String? in
            guard event.type == .contentUpdated || event.type == .started else { return nil }
            return event.data["content"]?["state"]?["status"]?.stringValue
        }
    }
}

extension Array {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var mapped: [T] = []
        for element in self { mapped.append(try await transform(element)) }
        return mapped
    }
}

