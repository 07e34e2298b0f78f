import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A program a test started — a server, the CLI, a script — with what it prints kept and its end
/// watched, so that every wait on it ends: when what was awaited shows, when the program ends,
/// or when time runs out, with how it ended and what it said last.
///
/// Why the end is watched here, and neither by reading the output to its close nor by
/// `Process.waitUntilExit`: a Swift program that crashes starts `swift-backtrace`, which inherits
/// every descriptor it has — its output, and the socket whose closing is how Foundation's
/// `Process` learns that a child ended. When the program is killed while the backtracer runs (a
/// watchdog's SIGKILL, a second signal), the backtracer blocks for ever, and neither closes: a
/// test that read to the end, waited for a line or waited for the exit hung the whole run. Here
/// `waitid` says when the program ends, and that ends every wait; what it wrote before is kept.
public final class ChildProcess: Sendable {
    /// The program and its first argument (`islet serve`), for messages.
    public let name: String
    /// Its process id, and its process group's: each program starts in a group of its own (`spawn`).
    public let pid: Int32
    private let transcript: Transcript

    /// What every program started here is given in `SWIFT_BACKTRACE`: a crash report that never
    /// waits for someone at a terminal, with the crashed thread only, short enough to read in a
    /// test's failure.
    public static let backtraceSettings = "enable=yes,interactive=no,threads=crashed,registers=none,images=none"

    /// Starts `executable` with this process's environment, `SWIFT_BACKTRACE` set to
    /// `backtraceSettings`, and `environment` over both.
    /// - Parameters:
    ///   - input: written to its standard input, which is then closed; none: `/dev/null`.
    ///   - errorsApart: keeps standard error apart (`errors`) instead of in `output`, in order.
    public init(
        _ executable: URL, _ arguments: [String] = [], environment: [String: String] = [:], input: Data? = nil,
        errorsApart: Bool = false
    ) async throws {
        name = ([executable.lastPathComponent] + arguments.prefix(1)).joined(separator: " ")
        let environment = ProcessInfo.processInfo.environment
            .merging(["SWIFT_BACKTRACE": Self.backtraceSettings]) { _, new in new }
            .merging(environment) { _, new in new }
        let spawned = try spawn(executable.path, arguments, environment: environment, input: input != nil, errorsApart: errorsApart)
        let transcript = Transcript()
        var ended: [Int32] = [-1, -1]
        guard pipe2(&ended, O_CLOEXEC) == 0 else { throw SpawnFailure(description: "pipe2: \(String(cString: strerror(errno)))") }
        let (pid, signal) = (spawned.pid, ended[1])
        Thread {
            transcript.exited(Termination(waitingFor: pid))
            var one: UInt8 = 1
            _ = write(signal, &one, 1)
            close(signal)
        }.start()
        let streams = [spawned.output] + (spawned.errors.map { [$0] } ?? [])
        let (endedReading) = ended[0]
        Thread {
            transcript.record(streams, until: endedReading)
            for fd in streams + [endedReading] { close(fd) }
        }.start()
        if let input, let fd = spawned.input {
            input.withUnsafeBytes { bytes in
                var offset = 0
                while offset < bytes.count {
                    let written = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                    if written < 0 && errno == EINTR { continue }
                    guard written > 0 else { break }
                    offset += written
                }
            }
            close(fd)
        }
        self.pid = pid
        self.transcript = transcript
    }

    /// What it printed so far: its standard output, and its standard error unless kept apart.
    public var output: String { transcript.text(of: .output) }
    /// What it printed on standard error, when kept apart.
    public var errors: String { transcript.text(of: .errors) }
    /// How it ended, once it has and all it printed is in `output`; nil while it runs.
    public var termination: Termination? { transcript.ending }

    /// Waits until `match` finds what it looks for in `output`, and returns it.
    /// - Parameters:
    ///   - what: what is awaited, for the message when it does not come ("it printed …").
    /// - Throws: `Ended` if the program ends first, `NotShown` if `seconds` pass first.
    public func waitFor<T: Sendable>(
        _ what: String, within seconds: Double = 30, _ match: @escaping @Sendable (String) -> T?
    ) async throws -> T {
        let (transcript, name) = (self.transcript, self.name)
        do {
            return try await within(seconds) {
                for await _ in transcript.changes() {
                    let (ending, output) = (transcript.ending, transcript.text(of: .output))
                    if let found = match(output) { return found }
                    if let ending { throw Ended(name: name, awaited: what, termination: ending, output: output) }
                }
                throw CancellationError()
            }
        } catch is TimedOut {
            throw NotShown(name: name, awaited: what, seconds: seconds, output: output)
        }
    }

    /// Waits for the program to end. One still running `seconds` later is killed, with what it
    /// started (status 9), so that a program that hangs fails the test instead of hanging it.
    @discardableResult
    public func waitForEnd(orKillAfter seconds: Double) async -> Termination {
        if let ending = await ending(within: seconds) { return ending }
        kill()
        return await ending(within: 30) ?? .signal(SIGKILL)
    }

    /// Sends `signal`, and waits for the program to end as `waitForEnd(orKillAfter:)` does.
    @discardableResult
    public func stop(_ signal: Int32, orKillAfter seconds: Double = 30) async -> Termination {
        if !transcript.hasExited { send(signal, to: pid) }
        return await waitForEnd(orKillAfter: seconds)
    }

    /// Kills the program with SIGKILL, and the processes it started with it: a crashed Swift
    /// program's backtracer would else block for ever once the program is gone. They are its
    /// process group, in which each program starts (`spawn`).
    public func kill() {
        guard !transcript.hasExited else { return }
        send(SIGKILL, to: getpgid(pid) == pid ? -pid : pid)
    }

    /// How the program ended, once it has and all it printed is read; nil if it still runs
    /// `seconds` later.
    private func ending(within seconds: Double) async -> Termination? {
        let transcript = self.transcript
        return try? await within(seconds) {
            for await _ in transcript.changes() {
                if let ending = transcript.ending { return ending }
            }
            throw CancellationError()
        }
    }

    deinit {
        kill()
        // Collected once it has ended (until then it keeps its pid, which `kill` relies on).
        let pid = self.pid
        Thread { _ = waitpid(pid, nil, 0) }.start()
    }
}

/// `kill(2)`, under a name `ChildProcess.kill()` does not hide; a negative pid is a process group.
private func send(_ signal: Int32, to pid: Int32) {
    kill(pid, signal)
}
