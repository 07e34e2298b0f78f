import AsyncHTTPClient
import Crypto
import Foundation
import IsletClient
import IsletCore
import IsletTestSupport
import Synchronization
import Testing

/// Apple's key sets (docs/delivery.md, "Key sets"), rehearsed against B playing Apple: A moves
/// to a new key with `islet apps delivery rotate` while updates flow, B enforces Apple's limits,
/// and the old key, revoked on B, is refused there after A has moved.
extension DeliveryLoopTests {
    @Test func aRotationWhileUpdatesFlowFailsNoPushAndTheRevokedKeyIsRefused() async throws {
        try await withLoop { loop in
            let bAdmin = IsletClient(server: loop.b.url, key: loop.bData.adminKey, http: loop.http)
            let oldKey = loop.providerKey
            let newKey = P256.Signing.PrivateKey()
            // "Apple" holds the team's two team-scoped keys of the environment; a third is refused
            // until one is revoked, as Apple refuses it.
            for (key, id) in [(oldKey, "KEY1234567"), (newKey, "KEY7654321")] {
                _ = try await bAdmin.addProviderKey(
                    bundleId: Self.bundleId, keyId: id, teamId: "TEAM123456", publicKey: key.publicKey.pemRepresentation, kind: .team,
                    environment: .development
                )
            }
            do {
                _ = try await bAdmin.addProviderKey(
                    bundleId: Self.bundleId, keyId: "KEY3333333", teamId: "TEAM123456",
                    publicKey: P256.Signing.PrivateKey().publicKey.pemRepresentation, kind: .team, environment: .development
                )
                Issue.record("a third team-scoped key was taken")
            } catch ClientError.refused(let status, let error) {
                #expect(status == 409 && error.reason == .tooManyKeys, "\(error)")
            }

            var started: [(a: Activity, b: Activity)] = []
            for order in ["1", "2", "3"] { started.append(try await loop.startActivity(order: order)) }
            let activities = started
            // Updates flow, one writer per activity, until told to stop.
            let flow = Flow()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (onA, _) in activities {
                    group.addTask {
                        var step = 0
                        while flow.flowing.load(ordering: .relaxed) {
                            step += 1
                            try await loop.update(onA.id, "step \(step)")
                            flow.sent.withLock { $0[onA.id] = step }
                        }
                    }
                }
                // Some updates go with the old key first.
                _ = try await eventually("updates flow") { flow.sent.withLock { $0.values.min() ?? 0 } >= 10 ? true : nil }
                let keyFile = loop.aData.url.appendingPathComponent("AuthKey_KEY7654321.p8")
                try newKey.pemRepresentation.write(to: keyFile, atomically: true, encoding: .utf8)
                let rotated = try await runCLI(
                    [
                        "apps", "delivery", "rotate", Self.bundleId, "--team-id", "TEAM123456", "--key-file", keyFile.path,
                        "--environment", "development",
                    ],
                    environment: ["ISLET_URL": loop.a.url, "ISLET_KEY": loop.aAdminKey]
                )
                #expect(rotated.status == 0, "\(rotated.stderr)")
                #expect(rotated.stdout.contains("key KEY7654321 signs from now on; KEY1234567 is removed"), "\(rotated.stdout)")
                // The developer revokes the old key at "Apple" once A has moved.
                let revoked = try await runCLI(
                    ["apps", "revoke-key", Self.bundleId, "KEY1234567"], environment: ["ISLET_URL": loop.b.url, "ISLET_KEY": loop.bData.adminKey]
                )
                #expect(revoked.status == 0 && revoked.stdout.contains("Key KEY1234567 is revoked"), "\(revoked.stdout) \(revoked.stderr)")
                let revokedAt = flow.sent.withLock { $0 }
                _ = try await eventually("updates flow after the revocation") {
                    let now = flow.sent.withLock { $0 }
                    return activities.allSatisfy { (now[$0.a.id] ?? 0) >= (revokedAt[$0.a.id] ?? 0) + 10 } ? true : nil
                }
                flow.flowing.store(false, ordering: .relaxed)
                try await group.waitForAll()
            }

            // Every activity reaches its last update on B, and no request failed, waited or was
            // refused: not one 403, no retry, nothing held.
            let last = flow.sent.withLock { $0 }
            for (onA, onB) in activities {
                try await loop.waitOnB(onB.id, status: "step \(last[onA.id]!)", within: 60)
                let log = try await loop.appOnA.deliveries(onA.id)
                let troubled = log.filter { [.retrying, .failed, .held].contains($0.report.outcome) || $0.report.status == 403 }
                #expect(troubled.isEmpty, "\(troubled.map(\.report))")
            }
            // B saw both keys sign, and never refused a token.
            var request = HTTPClientRequest(url: loop.b.url + "/v1/apns/requests?limit=1000")
            request.headers.add(name: "Authorization", value: "Bearer \(loop.bData.adminKey)")
            let seen = String(buffer: try await loop.http.execute(request, timeout: .seconds(10)).body.collect(upTo: 1 << 24))
            #expect(seen.contains(#"\"kid\":\"KEY1234567\""#) || seen.contains(#""kid":"KEY1234567""#), "\(seen.prefix(1_000))")
            #expect(seen.contains(#"\"kid\":\"KEY7654321\""#) || seen.contains(#""kid":"KEY7654321""#), "\(seen.prefix(1_000))")
            #expect(!seen.contains("InvalidProviderToken"), "B refused a provider token")
            // A holds the new key alone; the old one, pushed with now, is refused by B.
            let keys = try await IsletClient(server: loop.a.url, key: loop.aAdminKey, http: loop.http).deliveryKeys(bundleId: Self.bundleId)
            #expect(keys.map(\.keyId) == ["KEY7654321"])
            let oldKeyFile = loop.aData.url.appendingPathComponent("AuthKey_KEY1234567.p8")
            try oldKey.pemRepresentation.write(to: oldKeyFile, atomically: true, encoding: .utf8)
            let token = try #require(try await loop.appOnB.activity(activities[0].b.id).pushToken)
            let refused = try await runCLI(
                [
                    "push", token, "--app", Self.bundleId, "--state", #"{"status":"forged"}"#, "--key-file", oldKeyFile.path,
                    "--team-id", "TEAM123456", "--host", "https://127.0.0.1:\(loop.b.apnsPort!)", "--data", loop.bData.path,
                ],
                environment: [:]
            )
            #expect(refused.status == 1 && (refused.stdout + refused.stderr).contains("InvalidProviderToken"), "\(refused.stdout) \(refused.stderr)")
        }
    }
}

extension DeliveryLoopTests {
    /// A key added on A that Apple does not take (made for another team, not yet active) is
    /// refused, marked, and the key before it signs again at once: the update arrives.
    @Test func aKeyAppleRefusesLeavesTheSigningToTheKeyBefore() async throws {
        try await withLoop { loop in
            let (onA, onB) = try await loop.startActivity(order: "7")
            let admin = IsletClient(server: loop.a.url, key: loop.aAdminKey, http: loop.http)
            let unknown = P256.Signing.PrivateKey()
            let added = try await admin.addDeliveryKey(bundleId: Self.bundleId, DeliveryCredentialBody(
                teamId: "TEAM123456", keyId: "KEYUNKNOWN", privateKey: unknown.pemRepresentation, environment: .development
            ))
            // It sends where the environment's key sends, without being told.
            #expect(added.url == "https://127.0.0.1:\(loop.b.apnsPort!)" && added.caCertificate != nil)
            try await loop.update(onA.id, "preparing")
            try await loop.waitOnB(onB.id, status: "preparing")
            let keys = try await admin.deliveryKeys(bundleId: Self.bundleId)
            #expect(keys.first { $0.keyId == "KEYUNKNOWN" }?.failure?.contains("InvalidProviderToken") == true, "\(keys)")
            #expect(keys.first { $0.keyId == "KEY1234567" }?.failure == nil)
            // The refused key is reported, and delivery is not degraded: another key signs.
            #expect(try await loop.deliveryHealth()["status"] == "ok")
            let overview = try await loop.deliveryOverview()
            #expect(overview["status"] == "ok", "\(overview)")
            // The next update goes with the good key at once: no 403 on its way.
            try await loop.update(onA.id, "onTheWay")
            try await loop.waitOnB(onB.id, status: "onTheWay")
            let log = try await loop.appOnA.deliveries(onA.id)
            #expect(log.last { $0.report.status != nil }?.report.status == 200)
            #expect(log.filter { $0.report.status == 403 }.count == 1, "\(log.map(\.report))")
        }
    }
}

/// Updates flowing from several writers: whether they go on, and the last step each sent.
private final class Flow: Sendable {
    let flowing = Atomic<Bool>(true)
    let sent = Mutex<[ActivityID: Int]>([:])
}
