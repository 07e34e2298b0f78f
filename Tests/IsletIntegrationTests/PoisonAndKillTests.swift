import AsyncHTTPClient
import Crypto
import Foundation
import GRDB
import IsletAPNs
import IsletClient
import IsletCore
import IsletTestSupport
import NIOSSL
import Testing

extension DurabilityTests {
    /// Rows stored before dates were checked (a start at 1e21, a stale date at 1e300, a state
    /// the layout reads as a date of 1e300) trapped the server at every start. Now it starts,
    /// shows them, takes changes, and stops cleanly.
    @Test func aPoisonedRowNeverStopsTheServer() async throws {
        try await withHTTPClient { http in
            let served = try await ServedApp("com.example.ci", http: http)
            let (data, app) = (served.data, served.app)
            var (server, client) = (served.server, served.client)
            let layout = try WireFormat.decoder().decode(JSONValue.self, from: Data(contentsOf: Self.examples.appendingPathComponent("ci-build/layout.json")))
            _ = try await client.putLayout(bundleId: "com.example.ci", attributesType: "StatusAttribute", layout)
            func start(_ state: JSONValue, start: Date? = nil) async throws -> ActivityID {
                try await client.start(ActivityRequest(
                    attributesType: "StatusAttribute", attributes: ["buildId": "42"], content: ActivityContent(state: state),
                    alert: start == nil ? nil : Alert(title: "Soon", body: "Build 42"), start: start
                )).id
            }
            let pending = try await start(["status": "pending"], start: Date().addingTimeInterval(600))
            let farDate = try await start(["status": "inProgress", "estimatedCompletionTime": 1e300])
            let farStale = try await start(["status": "inProgress", "estimatedCompletionTime": 0])
            #expect(await server.stop(signal: SIGTERM) == 0)

            let database = try DatabaseQueue(path: data.url.appendingPathComponent("islet.sqlite").path)
            try await database.write { db in
                try db.execute(
                    sql: "UPDATE activity SET deadline = 1e21, body = json_set(body, '$.scheduledStart', 1e21) WHERE id = ?",
                    arguments: [pending]
                )
                try db.execute(
                    sql: "UPDATE activity SET deadline = 1e300, body = json_set(body, '$.content.staleDate', 1e300, '$.autoEndAt', 1e300) WHERE id = ?",
                    arguments: [farStale]
                )
            }
            try database.close()

            for round in 1...2 {
                server = try await ServerProcess(data: data)
                client = IsletClient(server: server.url, key: app.apiKey, http: http)
                let health = try await client.health()
                #expect(health["status"] == "ok", "round \(round)")
                let listed = try await client.activities(ActivityFilter(states: [.pending, .active, .stale]))
                #expect(Set(listed.map(\.id)) == [pending, farDate, farStale], "round \(round)")
                let display = try await http.get(url: server.url + "/v1/devices/default/display").get()
                #expect(display.status == .ok, "round \(round)")
                for id in [pending, farDate, farStale] {
                    _ = try await client.presentation(id)
                }
                _ = try await client.update(farStale, ContentUpdate(content: ActivityContent(state: ["status": "succeed"])))
                #expect(await server.stop(signal: SIGTERM) == 0, "round \(round): \(server.output)")
                let log = server.output
                #expect(!log.contains(" error:") && !log.contains("critical"), "round \(round): \(log)")
            }
        }
    }

    /// Five rounds of kill -9 while REST clients update and APNs providers push over HTTP/2
    /// (strict mode: a 200 means applied): everything acknowledged is there after each restart,
    /// and the database is intact.
    @Test func acknowledgedPushesAndUpdatesSurviveKillRounds() async throws {
        try await withHTTPClient { http in
            let served = try await ServedApp("com.example.delivery", http: http)
            let (data, app) = (served.data, served.app)
            var (server, client) = (served.server, served.client)
            let privateKey = P256.Signing.PrivateKey()
            _ = try await client.addProviderKey(
                bundleId: "com.example.delivery", keyId: "KEY1234567", teamId: "TEAM123456", publicKey: privateKey.publicKey.pemRepresentation
            )
            _ = try await client.setStrictPushes(true, bundleId: "com.example.delivery")
            let signer = try await ProviderTokenSigner(p8: privateKey.pemRepresentation, keyId: "KEY1234567", teamId: "TEAM123456")
            var activities: [Activity] = []
            for index in 0..<4 {
                activities.append(try await client.start(ActivityRequest(
                    attributesType: "DeliveryAttributes", attributes: ["order": .integer(Int64(index))],
                    content: ActivityContent(state: ["seq": 0]), pushType: .token
                )))
            }
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .file(data.url.appendingPathComponent("tls/ca.pem").path)
            let apnsHTTP = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
            let acknowledged = Acknowledgements()
            do {
                try await killRounds()
                try await apnsHTTP.shutdown()
            } catch {
                try? await apnsHTTP.shutdown()
                throw error
            }
            func killRounds() async throws {
            for round in 1...5 {
                let apns = APNsClient(server: "https://localhost:\(server.apnsPort!)", http: apnsHTTP)
                let jwt = try await signer.token()
                let restWriters = (0..<3).map { _ in
                    Task { [client, activities] in
                        while !Task.isCancelled {
                            let seq = acknowledged.nextSequence()
                            let id = activities[Int(seq) % activities.count].id
                            do {
                                _ = try await client.update(id, ContentUpdate(content: ActivityContent(state: ["seq": .integer(seq)])))
                                acknowledged.record(seq, for: id)
                            } catch {
                                return
                            }
                        }
                    }
                }
                let pushWriters = (0..<3).map { _ in
                    Task { [activities] in
                        while !Task.isCancelled {
                            let seq = acknowledged.nextSequence()
                            let activity = activities[Int(seq) % activities.count]
                            // No timestamp: "now", like the REST updates beside it, so none is older.
                            let payload = #"{"aps":{"event":"update","content-state":{"seq":\#(seq)}}}"#
                            do {
                                let answer = try await apns.push(
                                    token: activity.pushToken!, topic: "com.example.delivery", payload: Data(payload.utf8),
                                    providerToken: jwt, extraHeaders: [("apns-priority", "5")]
                                )
                                guard answer.status == 200 else { return }
                                acknowledged.record(seq, for: activity.id)
                            } catch {
                                return
                            }
                        }
                    }
                }
                let target = acknowledged.count + 200
                while acknowledged.count < target {
                    try await Task.sleep(for: .milliseconds(10))
                }
                #expect(await server.stop(signal: SIGKILL) == SIGKILL)
                for writer in restWriters + pushWriters { await writer.value }

                server = try await ServerProcess(data: data)
                client = IsletClient(server: server.url, key: app.apiKey, http: http)
                let acked = acknowledged.byActivity.withLock { $0 }
                for activity in activities {
                    let applied = Set(try await client.history(activity.id).compactMap { event -> Int64? in
                        guard event.type == .contentUpdated, case .integer(let seq) = event.data["content"]?["state"]?["seq"] else {
                            return nil
                        }
                        return seq
                    })
                    let missing = acked[activity.id, default: []].subtracting(applied)
                    #expect(missing.isEmpty, "round \(round): acknowledged but lost: \(missing.sorted())")
                }
            }
            }
            #expect(acknowledged.count >= 1000)
            #expect(await server.stop(signal: SIGTERM) == 0)
            let database = try DatabaseQueue(path: data.url.appendingPathComponent("islet.sqlite").path)
            #expect(try await database.read { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") } == "ok")
        }
    }

    static let examples = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Examples/Layouts")
}
