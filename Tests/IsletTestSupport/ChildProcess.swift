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
    /// Its process id, and its process group's: `Process` starts each program in a group of its own.
    public let pid: Int32
    private let process: Process
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
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment
            .merging(["SWIFT_BACKTRACE": Self.backtraceSettings]) { _, new in new }
            .merging(environment) { _, new in new }
        let output = Pipe()
        let errors = errorsApart ? Pipe() : output
        let inputPipe = input.map { _ in Pipe() }
        process.standardInput = inputPipe ?? FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = errors
        try await spawnWithNoSignalBlocked(process)
        let transcript = Transcript()
        let ended = Pipe()
        Thread {
            transcript.exited(Termination(waitingFor: process))
            ended.fileHandleForWriting.write(Data([1]))
        }.start()
        let pipes = errorsApart ? [output, errors] : [output]
        Thread { transcript.record(pipes, until: ended) }.start()
        if let input, let inputPipe {
            inputPipe.fileHandleForWriting.write(input)
            try inputPipe.fileHandleForWriting.close()
        }
        self.process = process
        self.pid = process.processIdentifier
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
    /// process group, which `Process` gives each program it starts.
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
    }
}

/// Starts `process` from a thread of its own that blocks no signal: a child inherits its
/// spawner's blocked signals, and the concurrency pool's threads block SIGTERM, which a child
/// started from one (a shell script) would then never see.
///
/// One start at a time: the test process crashed twice inside Foundation's `Process.run`
/// (a bad read in `memcpy`) while many programs were being started at once, once ending a
/// whole run. Not root-caused; a start takes milliseconds, so taking turns costs nothing.
public func spawnWithNoSignalBlocked(_ process: Process) async throws {
    try await offThePool { [process] in
        var none = sigset_t()
        sigemptyset(&none)
        pthread_sigmask(SIG_SETMASK, &none, nil)
        return spawning.withLock { Result { try process.run() } }
    }.get()
}

/// Taken around every start (`spawnWithNoSignalBlocked`).
private let spawning = NSLock()

/// `kill(2)`, under a name `ChildProcess.kill()` does not hide; a negative pid is a process group.
private func send(_ signal: Int32, to pid: Int32) {
    kill(pid, signal)
}
