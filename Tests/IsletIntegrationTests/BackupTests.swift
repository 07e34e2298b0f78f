import AsyncHTTPClient
import Foundation
import IsletClient
import IsletCore
import IsletTestSupport
import Synchronization
import Testing

/// `islet backup` and `islet restore` (issue 32, docs/operations.md "Backups"), with the real
/// programs: a backup taken while 16 clients write restores every change acknowledged before it
/// began, though the node is killed with SIGKILL right after; the same for PostgreSQL's tools.
@Suite("Backups", .hangDetector)
struct BackupTests {
    @Test(.hangDetector)
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
        let data = DataDirectory()
        let node = try await ServerProcess(data: data, environment: Writers.room)
        let app = try await IsletClient(server: node.url, key: data.adminKey, http: http).createApp(bundleId: "com.example.backup")
        let writers = try await Writers.start(IsletClient(server: node.url, key: app.apiKey, http: http))
        let backupBegan = Date()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("islet-backup-\(UUID().uuidString).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        let backup = try await runCLI(["backup", file, "--data", data.path])
        // Killed right after, with the clients still writing.
        _ = await node.stop(signal: SIGKILL)
        await writers.stop()
        #expect(backup.status == 0, "\(backup.stderr)")
        #expect(backup.stdout.contains("Backed up"), "\(backup.stdout)")
        // A backup never overwrites a file.
        let again = try await runCLI(["backup", file, "--data", data.path])
        #expect(again.status == 1 && again.stderr.contains("exists already"), "\(again.stderr)")

        let restored = DataDirectory()
        let restore = try await runCLI(["restore", file, "--data", restored.path])
        #expect(restore.status == 0, "\(restore.stderr)")
        let server = try await ServerProcess(data: restored, environment: Writers.room)
        try await writers.expectEveryChange(acknowledgedBefore: backupBegan, in: IsletClient(server: server.url, key: app.apiKey, http: http))
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

    /// docs/operations.md's PostgreSQL backup, as written there: `pg_dump --format=custom
    /// --serializable-deferrable` while the node writes, the node killed right after, then
    /// `createdb` and `pg_restore`, and a node started on the restored database.
    @Test(.enabled(if: PostgresServer.available), .hangDetector)
    func aPostgreSQLDumpTakenUnderLoadRestoresEveryChangeAcknowledgedBeforeIt() async throws {
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            let database = try await PostgresServer.newDatabase()
            let adminKey = "admin-" + UUID().uuidString
            let node = try await ServerProcess(
                data: DataDirectory(),
                environment: Writers.room.merging(["ISLET_STORE": database, "ISLET_SERVER_ADMIN_KEY": adminKey]) { _, new in new }
            )
            let app = try await IsletClient(server: node.url, key: adminKey, http: http).createApp(bundleId: "com.example.backup")
            let writers = try await Writers.start(IsletClient(server: node.url, key: app.apiKey, http: http))
            let dumpBegan = Date()
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("islet-\(UUID().uuidString).dump").path
            defer { try? FileManager.default.removeItem(atPath: file) }
            try await PostgresServer.client("pg_dump", ["--format=custom", "--serializable-deferrable", "-f", file, database])
            _ = await node.stop(signal: SIGKILL)
            await writers.stop()

            let restoredDatabase = try await PostgresServer.newDatabase()
            try await PostgresServer.client("pg_restore", ["-d", restoredDatabase, file])
            let restored = try await ServerProcess(
                data: DataDirectory(),
                environment: Writers.room.merging(["ISLET_STORE": restoredDatabase, "ISLET_SERVER_ADMIN_KEY": adminKey]) { _, new in new }
            )
            try await writers.expectEveryChange(
                acknowledgedBefore: dumpBegan, in: IsletClient(server: restored.url, key: app.apiKey, http: http)
            )
            _ = await restored.stop(signal: SIGTERM)
        } catch {
            try? await http.shutdown()
            throw error
        }
        try await http.shutdown()
    }
}

/// Sixteen clients of one app, each updating an activity of its own step after step and noting
/// each step acknowledged, until stopped.
private final class Writers: Sendable {
    /// Sixteen activities of one app on one device: room for them.
    static let room = ["ISLET_LIFECYCLE_MAX_ACTIVITIES_PER_APP": "20", "ISLET_LIFECYCLE_MAX_ACTIVITIES_PER_DEVICE": "20"]

    let ids: [ActivityID]
    let acknowledged = Acknowledged()
    private let writing = Mutex<Task<Void, any Error>?>(nil)

    private init(ids: [ActivityID]) {
        self.ids = ids
    }

    /// Starts the activities and the clients; returns once every client had a few changes
    /// acknowledged (however slow the machine).
    static func start(_ client: IsletClient) async throws -> Writers {
        var started: [ActivityID] = []
        for index in 0..<16 {
            started.append(try await client.start(ActivityRequest(
                attributesType: "RideAttributes", content: ActivityContent(state: ["step": 0, "client": .integer(Int64(index))])
            )).id)
        }
        let writers = Writers(ids: started)
        let (ids, acknowledged) = (writers.ids, writers.acknowledged)
        writers.writing.withLock { $0 = Task {
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
        } }
        try await within(60) {
            while acknowledged.steps.withLock({ steps in ids.contains { (steps[$0]?.count ?? 0) < 3 } }) {
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        return writers
    }

    func stop() async {
        let task = writing.withLock { $0 }
        task?.cancel()
        _ = try? await task?.value
    }

    /// Every step acknowledged before `moment` is in the restored histories `client` reads.
    func expectEveryChange(acknowledgedBefore moment: Date, in client: IsletClient) async throws {
        let before = acknowledged.steps.withLock { $0 }.mapValues { steps in steps.filter { $0.at < moment }.map(\.step).max() ?? 0 }
        #expect(before.count == 16 && before.values.allSatisfy { $0 >= 3 }, "every client wrote before the backup: \(before)")
        for id in ids {
            let steps = Set(try await client.history(id).compactMap { event -> Int64? in
                guard event.type == .contentUpdated, case .integer(let step)? = event.data["content"]?["state"]?["step"] else { return nil }
                return step
            })
            let last = before[id] ?? 0
            #expect(last == 0 || (1...last).allSatisfy(steps.contains), "\(id): acknowledged up to \(last) before the backup, restored up to \(steps.max() ?? 0)")
        }
    }
}

/// Each step a client's update had acknowledged, with when.
private final class Acknowledged: Sendable {
    let steps = Mutex<[ActivityID: [(step: Int64, at: Date)]]>([:])
}
