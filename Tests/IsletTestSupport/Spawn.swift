import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A program started with `posix_spawn`, and the descriptors of its standard streams.
///
/// Not Foundation's `Process`: on Linux, its `run()` (swift-corelibs-foundation 6.3.1) lists
/// `/proc/self/fd` by copying each `dirent`'s whole 256-byte `d_name`, which reads past the end
/// of readdir's buffer; when that buffer ends a page the test process died with SIGSEGV in
/// `memcpy` (seen twice in two loaded runs of the suite; fixed upstream after 6.3.1,
/// swift-corelibs-foundation#5472). Here glibc closes the descriptors itself
/// (`posix_spawn_file_actions_addclosefrom_np`), and the child starts with no signal blocked and
/// default dispositions, in a process group of its own, whatever thread spawns it.
struct Spawned {
    var pid: pid_t
    /// Its standard input's writing end, when it is given input.
    var input: Int32?
    /// Its standard output's reading end (standard error's too, unless apart).
    var output: Int32
    /// Its standard error's reading end, when apart.
    var errors: Int32?
}

// glibc has both (2.34 and later for the first), but Swift's Glibc module imports neither.
@_silgen_name("posix_spawn_file_actions_addclosefrom_np")
private func posix_spawn_file_actions_addclosefrom_np(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ from: Int32) -> Int32
@_silgen_name("pipe2")
func pipe2(_ ends: UnsafeMutablePointer<Int32>, _ flags: Int32) -> Int32

/// Why a program could not be started.
public struct SpawnFailure: Error, CustomStringConvertible {
    public var description: String
}

/// Starts `executable` with `arguments` and exactly `environment`.
///
/// - Parameters:
///   - input: whether its standard input is a pipe (the caller writes and closes it); otherwise `/dev/null`.
///   - errorsApart: standard error on a pipe of its own, rather than with standard output.
func spawn(_ executable: String, _ arguments: [String], environment: [String: String], input: Bool, errorsApart: Bool) throws -> Spawned {
    var pipes: [[Int32]] = []
    defer { for pipe in pipes { close(pipe[0]); close(pipe[1]) } }
    func newPipe() throws -> [Int32] {
        var ends: [Int32] = [-1, -1]
        guard pipe2(&ends, O_CLOEXEC) == 0 else { throw SpawnFailure(description: "pipe2: \(String(cString: strerror(errno)))") }
        pipes.append(ends)
        return ends
    }
    let output = try newPipe()
    let errors = errorsApart ? try newPipe() : nil
    let stdin = input ? try newPipe() : nil

    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    if let stdin {
        posix_spawn_file_actions_adddup2(&actions, stdin[0], 0)
    } else {
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    }
    posix_spawn_file_actions_adddup2(&actions, output[1], 1)
    posix_spawn_file_actions_adddup2(&actions, (errors ?? output)[1], 2)
    _ = posix_spawn_file_actions_addclosefrom_np(&actions, 3)

    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var none = sigset_t()
    sigemptyset(&none)
    posix_spawnattr_setsigmask(&attributes, &none)
    var defaults = sigset_t()
    sigemptyset(&defaults)
    for signal in [SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGCHLD] { sigaddset(&defaults, signal) }
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setpgroup(&attributes, 0)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))

    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
        for pointer in argv { free(pointer) }
        for pointer in envp { free(pointer) }
    }
    var pid: pid_t = 0
    let result = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
    guard result == 0 else { throw SpawnFailure(description: "cannot start \(executable): \(String(cString: strerror(result)))") }

    // The ends the child holds are closed here (the deferred close); the caller's are kept.
    func keep(_ fd: Int32) -> Int32 {
        fcntl(fd, F_DUPFD_CLOEXEC, 0)
    }
    return Spawned(pid: pid, input: stdin.map { keep($0[1]) }, output: keep(output[0]), errors: errors.map { keep($0[0]) })
}
