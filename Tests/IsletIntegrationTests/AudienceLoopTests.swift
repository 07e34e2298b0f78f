import AsyncHTTPClient
import Crypto
import Foundation
import IsletClient
import IsletCore
import IsletTestSupport
import Testing

/// Issue 44's "done when", with the real programs: the backend (`islet serve` A, one node on
/// SQLite or two on one PostgreSQL database) starts the match card for every user who follows
/// match 123, by tag, 10 s ahead. B plays Apple and Google and holds the phones: each user has
/// an iPhone (push-to-start through B's APNs endpoint) and an Android phone (an FCM message
/// through B's FCM endpoint). Every phone shows exactly one card, through a kill -9 of a node
/// mid-send, and the send begins at its time (how soon after is printed: a test checks no
/// speed).
///
/// `ISLET_AUDIENCE_USERS` says how many users (two phones each): 10,000 for the issue's figure
/// (20,000 phones, BENCHMARKS.md), 300 by default so that the suite keeps its time.
@Suite("A send to an audience, A to B", .serialized, .hangDetector)
struct AudienceLoopTests {
    static let bundleId = "com.example.match"
    static let project = "islet-audience-test"
    static let users = Int(ProcessInfo.processInfo.environment["ISLET_AUDIENCE_USERS"] ?? "") ?? 300
    static let limits = ["ISLET_LIFECYCLE_MAX_ACTIVITIES_PER_APP": "1000000", "ISLET_DELIVERY_MAX_BACKOFF": "1s"]

    final class Loop: @unchecked Sendable {
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        let bData = DataDirectory()
        let aData: [DataDirectory]
        var b: ServerProcess!
        var nodes: [ServerProcess] = []
        let aEnvironment: [String: String]
        let adminKey = "islet-audience-test-admin-key-0001"
        var keyOnA = ""
        var keyOnB = ""
        let providerKey = P256.Signing.PrivateKey()

        init(nodes: Int, database: String?) {
            aData = (0..<nodes).map { _ in DataDirectory() }
            var environment = AudienceLoopTests.limits.merging(["ISLET_SERVER_ADMIN_KEY": adminKey]) { $1 }
            if let database { environment["ISLET_STORE"] = database }
            aEnvironment = environment
        }

        var appOnA: IsletClient { IsletClient(server: nodes[0].url, key: keyOnA, http: http) }
        var appOnB: IsletClient { IsletClient(server: b.url, key: keyOnB, http: http) }
        var adminOnB: IsletClient { IsletClient(server: b.url, key: bData.adminKey, http: http) }

        /// B with the app, its provider key and a service account; the nodes of A with the app
        /// and credentials that send to B.
        func start() async throws {
            b = try await ServerProcess(data: bData, environment: AudienceLoopTests.limits)
            for data in aData { nodes.append(try await ServerProcess(data: data, environment: aEnvironment)) }
            let adminOnA = IsletClient(server: nodes[0].url, key: adminKey, http: http)
            keyOnA = try await adminOnA.createApp(bundleId: bundleId).apiKey
            keyOnB = try await adminOnB.createApp(bundleId: bundleId).apiKey
            let authority = try String(contentsOf: bData.url.appendingPathComponent("tls/ca.pem"), encoding: .utf8)
            _ = try await adminOnB.addProviderKey(
                bundleId: bundleId, keyId: "KEY1234567", teamId: "TEAM123456", publicKey: providerKey.publicKey.pemRepresentation
            )
            _ = try await adminOnA.putDeliveryCredential(bundleId: bundleId, DeliveryCredentialBody(
                teamId: "TEAM123456", keyId: "KEY1234567", privateKey: providerKey.pemRepresentation, environment: .development,
                url: "https://127.0.0.1:\(b.apnsPort!)", caCertificate: authority
            ))
            let account = try await adminOnB.issueServiceAccount(projectId: project)
            _ = try await adminOnA.putFCMCredential(bundleId: bundleId, FCMCredentialBody(
                serviceAccount: account, url: "https://127.0.0.1:\(b.apnsPort!)", caCertificate: authority
            ))
        }

        /// `count` users, each with an iPhone and an Android phone made on B, whose tokens
        /// their app reports to A, and tagged `match: 123` on A. Sixteen at a time.
        func makeFans(_ count: Int) async throws {
            try await AudienceLoopTests.forEach(0..<count, atOnce: 16) { user in
                let iPhone = String(format: "ios-%05d", user)
                let android = String(format: "android-%05d", user)
                _ = try await self.adminOnB.createDevice(id: iPhone)
                _ = try await self.adminOnB.createDevice(id: android, platform: .android)
                let pushToStart = try #require(try await self.adminOnB.settings(device: iPhone).first { $0.bundleId == bundleId }?.pushToStartToken)
                let fcm = try #require(try await self.adminOnB.settings(device: android).first { $0.bundleId == bundleId }?.fcmToken)
                _ = try await self.appOnA.registerPushToStartToken(pushToStart, environment: .development, device: iPhone, attributesType: "MatchAttributes")
                _ = try await self.appOnA.registerFCMToken(fcm, device: android)
                _ = try await self.appOnA.putUser(
                    bundleId: bundleId, externalId: String(format: "u-%05d", user),
                    PutAppUserBody(devices: [iPhone, android], tags: ["match": "123", "team": user % 2 == 0 ? "ajax" : "psv"])
                )
            }
        }

        /// The cards B shows with the match's attributes, by phone.
        func cardsOnB() async throws -> [DeviceID: [Activity]] {
            var cards: [DeviceID: [Activity]] = [:]
            var cursor: String?
            repeat {
                let page = try await appOnB.activityPage(ActivityFilter(attributesType: "MatchAttributes", limit: 1_000), cursor: cursor)
                for activity in page.items { cards[activity.deviceId, default: []].append(activity) }
                cursor = page.next
            } while cursor != nil
            return cards
        }

        /// Kills node `index` with SIGKILL and starts it again on its port and data.
        func kill(_ index: Int) async throws {
            let old = nodes[index]
            await old.stop(signal: SIGKILL)
            nodes[index] = try await ServerProcess(
                data: aData[index], port: old.port, environment: aEnvironment.merging(["ISLET_APNS_PORT": "\(old.apnsPort!)"]) { $1 }
            )
        }

        func stop() async {
            for node in nodes { await node.stop(signal: SIGTERM) }
            if let b { await b.stop(signal: SIGTERM) }
            try? await http.shutdown()
        }
    }

    func withLoop(nodes: Int = 1, database: String? = nil, _ body: (Loop) async throws -> Void) async throws {
        let loop = Loop(nodes: nodes, database: database)
        do {
            try await loop.start()
            try await body(loop)
        } catch {
            for (index, node) in loop.nodes.enumerated() { Issue.record("A\(index + 1) said, last:\n\(node.output.suffix(3_000))") }
            if let b = loop.b { Issue.record("B said, last:\n\(b.output.suffix(2_000))") }
            await loop.stop()
            throw error
        }
        await loop.stop()
    }

    /// The start by tag, 10 s ahead, reaches every phone once: killed mid-send with SIGKILL
    /// (one node on SQLite), or shared by two nodes on PostgreSQL with one of them killed.
    @Test(arguments: [false, true]) func aScheduledStartByTagShowsOneCardOnEveryPhone(onPostgres: Bool) async throws {
        if onPostgres, !PostgresServer.available { return }
        let database = onPostgres ? try await PostgresServer.newDatabase() : nil
        try await withLoop(nodes: onPostgres ? 2 : 1, database: database) { loop in
            try await loop.makeFans(Self.users)
            let phones = 2 * Self.users
            let at = Date().addingTimeInterval(10).rounded
            let made = try await loop.appOnA.createSend(bundleId: Self.bundleId, SendBody(
                action: .start, key: "match-123", audience: .tags(["match": "123"]), at: at, attributesType: "MatchAttributes",
                attributes: ["home": "Ajax", "away": "PSV"], content: ActivityContent(state: ["score": "0-0"])
            ))
            #expect(made.status == .scheduled)
            #expect(try await loop.cardsOnB().isEmpty, "nothing before its time")

            // Once the send has started phones, the node that runs it is killed (each node, on
            // PostgreSQL: the first, while the second goes on).
            let running = try await eventually("the send starts phones", within: 120) {
                let send = try await loop.appOnA.send(bundleId: Self.bundleId, id: made.id)
                return send.counts.started > 0 ? send : nil
            }
            let killedAt = Date().timeIntervalSince(at)
            try await loop.kill(0)
            let restartedAt = Date().timeIntervalSince(at)

            let done = try await eventually("the send is done", within: 600) {
                let send = try await loop.appOnA.send(bundleId: Self.bundleId, id: made.id)
                return send.status == .done ? send : nil
            }
            #expect(done.counts.targeted == phones && done.counts.started == phones && done.counts.failed == 0, "\(done.counts)")
            // It began when it was due, never before: its first phone's delay after `at` is
            // printed (0.03 s on SQLite, 0.47 s on two PostgreSQL nodes, unloaded; the issue's
            // 2 s), and only a hang fails it — with both cores busy beside the suite, a node may
            // get a third of a core.
            let targets = try await loop.appOnA.sendTargets(bundleId: Self.bundleId, id: made.id)
            let first = try #require(targets.compactMap(\.doneAt).min())
            #expect(first >= at && first.timeIntervalSince(at) < hangFloor, "first phone \(first.timeIntervalSince(at)) s after at")
            #expect(Set(targets.map(\.deviceId)).count == phones && targets.count == phones)

            let cards = try await eventually("every phone shows the card", within: 600) {
                let cards = try await loop.cardsOnB()
                return cards.count == phones && cards.values.allSatisfy { !$0.isEmpty } ? cards : nil
            }
            let twice = cards.filter { $0.value.count != 1 }.keys.sorted()
            // A push-to-start A sent just before the kill, whose 200 it had not written down, is
            // sent again after the restart: under its `apns-collapse-id` (A's activity id) the
            // phone shows it as the card it already is (this test once found 7 of 600 shown twice).
            #expect(twice.isEmpty, "phones with more than one card: \(twice.prefix(10))")
            let iPhones = cards.keys.filter { $0.hasPrefix("ios-") }.count
            #expect(iPhones == Self.users && cards.count - iPhones == Self.users)
            // When B (the phones) showed each card, after `at`: the whole spread, printed.
            let shown = cards.values.flatMap { $0 }.map { $0.createdAt.timeIntervalSince(at) }.sorted()
            let seconds = { (value: Double) in String(format: "%.2f s", value) }
            let log = "\(phones) phones, killed at \(running.counts.done) of \(running.counts.targeted) resolved (\(seconds(killedAt)) after at, back \(seconds(restartedAt))); first phone \(seconds(first.timeIntervalSince(at))) after at on A; "
                + "cards shown on B from \(seconds(shown[0])) to \(seconds(shown[shown.count - 1])) after at, half by \(seconds(shown[shown.count / 2])), "
                + "99% by \(seconds(shown[shown.count * 99 / 100]))"
            print("AudienceLoopTests (\(onPostgres ? "two nodes on PostgreSQL" : "SQLite")): \(log)")
        }
    }

    /// Runs `body` for each element, at most `width` at once.
    fileprivate static func forEach<S: Sequence & Sendable>(
        _ elements: S, atOnce width: Int, _ body: @escaping @Sendable (S.Element) async throws -> Void
    ) async throws where S.Element: Sendable {
        try await withThrowingTaskGroup(of: Void.self) { group in
            var iterator = elements.makeIterator()
            for _ in 0..<width {
                guard let element = iterator.next() else { break }
                group.addTask { try await body(element) }
            }
            while try await group.next() != nil {
                if let element = iterator.next() { group.addTask { try await body(element) } }
            }
        }
    }
}

extension Date {
    /// This moment to the whole second, as a send's `at` is usually given.
    fileprivate var rounded: Date { Date(timeIntervalSince1970: timeIntervalSince1970.rounded(.up)) }
}
