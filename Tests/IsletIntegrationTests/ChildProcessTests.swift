import Foundation
import IsletTestSupport
import Testing

/// The harness's hold on the programs it starts: a wait on one that dies ends when it dies,
/// saying how and what it printed last.
@Suite("Programs the tests start", .hangDetector)
struct ChildProcessTests {
    /// A server crashed and was killed while Swift's backtracer ran; the backtracer, left
    /// behind, held the server's output open for ever, and a test waiting for a line it would
    /// never print hung the whole run. The wait ends as the server does.
    @Test func aWaitOnAServerThatCrashesEndsWithItsSignal() async throws {
        let crashing = try await CrashingServer()
        let waiting = Task {
            try await crashing.server.child.waitFor("a line it never prints", within: 60) { $0.contains("never printed") ? true : nil }
        }
        let backtracer = try await crashing.crash()
        defer { kill(backtracer, SIGKILL) }
        let killed = ContinuousClock.now
        kill(crashing.server.pid, SIGABRT)

        let ended = await #expect(throws: ChildProcess.Ended.self) { try await waiting.value }
        // At its end, not at the wait's limit (the hang floor, 2 minutes).
        #expect(ContinuousClock.now - killed < .seconds(60))
        #expect(ended?.termination == .signal(SIGABRT))
        let message = ended?.description ?? ""
        #expect(message.contains("islet serve was killed by signal 6"), "\(message)")
        #expect(message.contains("listening on http://") && message.contains("*** Signal 6: Backtracing"), "\(message)")
    }

    /// A server killed in its crash takes its backtracer with it, which else stays for ever.
    @Test func killingACrashedServerEndsItsBacktracer() async throws {
        let crashing = try await CrashingServer()
        let backtracer = try await crashing.crash()
        defer { kill(backtracer, SIGKILL) }

        crashing.server.child.kill()
        #expect(await crashing.server.child.waitForEnd(orKillAfter: 10) == .signal(SIGKILL))
        try await within(10) {
            while isRunning(backtracer) { try await Task.sleep(for: .milliseconds(10)) }
        }
    }

    /// A server that exits before it listens fails its start at once, with its status and why.
    @Test func aServerThatExitsBeforeItListensFailsItsStartWithItsStatus() async throws {
        let ended = await #expect(throws: ChildProcess.Ended.self) {
            _ = try await ServerProcess(data: DataDirectory(), port: 70_000)
        }
        #expect(ended?.termination == .exited(1))
        #expect(ended?.description.contains("server.port") == true, "\(ended?.description ?? "")")
    }
}

/// `islet serve` with a backtracer that never finishes: `swift-backtrace` does that when the
/// program it reports on is killed under it (it waits for ever for the dead program's memory),
/// and a stand-in does it every time, where the real one, often done in milliseconds, would
/// race the test.
private struct CrashingServer {
    let data = DataDirectory()
    let server: ServerProcess

    init() async throws {
        let standIn = data.url.appendingPathComponent("swift-backtrace")
        try FileManager.default.createDirectory(at: data.url, withIntermediateDirectories: true)
        try "#!/bin/sh\nexec sleep 600\n".write(to: standIn, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: standIn.path)
        server = try await ServerProcess(
            data: data, environment: ["SWIFT_BACKTRACE": ChildProcess.backtraceSettings + ",swift-backtrace=\(standIn.path)"]
        )
    }

    /// Crashes the server from outside: SIGABRT runs the Swift runtime's crash handler, which
    /// puts the signals' default actions back and starts the backtracer; once it runs, returns
    /// its pid. The server waits for it, for ever; another SIGABRT kills it.
    func crash() async throws -> Int32 {
        kill(server.pid, SIGABRT)
        return try await within(30) { [server] in
            while true {
                if let backtracer = children(of: server.pid).first { return backtracer }
                try await Task.sleep(for: .milliseconds(10))
            }
        }
    }
}

/// The processes `pid` started that still run, from Linux's /proc.
private func children(of pid: Int32) -> [Int32] {
    let threads = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
    return threads.flatMap { thread in
        ((try? String(contentsOfFile: "/proc/\(pid)/task/\(thread)/children", encoding: .utf8)) ?? "")
            .split(separator: " ").compactMap { Int32($0) }
    }
}

/// Whether `pid` runs: it exists, and is not a zombie left for a parent to collect.
private func isRunning(_ pid: Int32) -> Bool {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return false }
    return stat.split(separator: ")").last?.split(separator: " ").first != "Z"
}
