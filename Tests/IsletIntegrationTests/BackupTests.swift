import AsyncHTTPClient
import Foundation
import IsletClient
import IsletCore
import IsletTestSupport
import Synchronization
import Testing

/// `islet backup` and `islet restore` (issue 32, docs/operations.md "Backups"), with the real
/// programs: a backup taken while 16 clients write restores every change acknowledged before it
/// began, though the node is killed with SIGKILL right after.
@Suite("Backups")
struct BackupTests {
    @Test(.timeLimit(.minutes(3)))
    func aBackupTakenUnderLoadRestoresEveryChangeAcknowledgedBeforeIt() async throws {
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            try await Self.backUpAndRestore(http: http)
        } catch {
            try? await http.shutdown()
            throw error
        }
        try await http.shutdown()
    }

    private static func backUpAndRestore(http: HTTPClient) async throws {
        // Sixteen activities of one app on one device: room for them.
        let room = ["ISLET_LIFECYCLE_MAX_ACTIVITIES_PER_APP": "20", "ISLET_LIFECYCLE_MAX_ACTIVITIES_PER_DEVICE": "20"]
        let data = DataDirectory()
        let node = try await ServerProcess(data: data, environment: room)
        let app = try await IsletClient(server: node.url, key: data.adminKey, http: http).createApp(bundleId: "com.example.backup")
        let client = IsletClient(server: node.url, key: app.apiKey, http: http)
        var started: [ActivityID] = []
        for index in 0..<16 {
            started.append(try await client.start(ActivityRequest(
                attributesType: "RideAttributes", content: ActivityContent(state: ["step": 0, "client": .integer(Int64(index))])
            )).id)
        }
        let ids = started
        // Each client updates its own activity, step after step, noting each step acknowledged.
        let acknowledged = Acknowledged()
        let writing = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for id in ids {
                    group.addTask {
                        var step: Int64 = 0
                        while !Task.isCancelled {
                            step += 1
                            guard (try? await client.update(id, ContentUpdate(content: ActivityContent(state: ["step": .integer(step)])))) != nil else { return }
                            let now = Date()
                            acknowledged.steps.withLock { $0[id, default: []].append((step, now)) }
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        // Every client has had a few changes acknowledged (however slow the machine) before the backup.
        try await within(60) {
            while acknowledged.steps.withLock({ steps in ids.contains { (steps[$0]?.count ?? 0) < 3 } }) {
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        let backupBegan = Date()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("islet-backup-\(UUID().uuidString).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        let backup = try await runCLI(["backup", file, "--data", data.path])
        // Killed right after, with the clients still writing.
        _ = await node.stop(signal: SIGKILL)
        writing.cancel()
        _ = try? await writing.value
        #expect(backup.status == 0, "\(backup.stderr)")
        #expect(backup.stdout.contains("Backed up"), "\(backup.stdout)")
        // A backup never overwrites a file.
        let again = try await runCLI(["backup", file, "--data", data.path])
        #expect(again.status == 1 && again.stderr.contains("exists already"), "\(again.stderr)")

        let restored = DataDirectory()
        let restore = try await runCLI(["restore", file, "--data", restored.path])
        #expect(restore.status == 0, "\(restore.stderr)")
        let server = try await ServerProcess(data: restored, environment: room)
        let restoredClient = IsletClient(server: server.url, key: app.apiKey, http: http)
        let before = acknowledged.steps.withLock { $0 }.mapValues { steps in steps.filter { $0.at < backupBegan }.map(\.step).max() ?? 0 }
        #expect(before.count == 16 && before.values.allSatisfy { $0 >= 3 }, "every client wrote before the backup: \(before)")
        for id in ids {
            let steps = Set(try await restoredClient.history(id).compactMap { event -> Int64? in
                guard event.type == .contentUpdated, case .integer(let step)? = event.data["content"]?["state"]?["step"] else { return nil }
                return step
            })
            let last = before[id] ?? 0
            #expect(last == 0 || (1...last).allSatisfy(steps.contains), "\(id): acknowledged up to \(last) before the backup, restored up to \(steps.max() ?? 0)")
        }
        // A running node's data directory takes no restore.
        let refused = try await runCLI(["restore", file, "--data", restored.path])
        #expect(refused.status == 1 && refused.stderr.contains("needs the node stopped"), "\(refused.stderr)")
        _ = await server.stop(signal: SIGTERM)
        // And a file that is not an Islet database is refused before anything is touched.
        let stray = FileManager.default.temporaryDirectory.appendingPathComponent("not-islet-\(UUID().uuidString)").path
        _ = FileManager.default.createFile(atPath: stray, contents: Data("hello".utf8))
        defer { try? FileManager.default.removeItem(atPath: stray) }
        let wrong = try await runCLI(["restore", stray, "--data", restored.path])
        #expect(wrong.status == 1, "\(wrong.stderr)")
    }
}

/// Each step a client's update had acknowledged, with when.
private final class Acknowledged: Sendable {
    let steps = Mutex<[ActivityID: [(step: Int64, at: Date)]]>([:])
}
