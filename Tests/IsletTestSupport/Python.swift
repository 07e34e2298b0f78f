import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Whether the system's Python can import `module`; always true when `requiredBy` (an
/// environment variable `.ci/run` sets) is set, so that there a missing module fails the test
/// rather than skipping it.
public func pythonHas(_ module: String, requiredBy variable: String) -> Bool {
    if ProcessInfo.processInfo.environment[variable] != nil { return true }
    guard let started = try? spawn("/usr/bin/env", ["python3", "-c", "import \(module)"], environment: ProcessInfo.processInfo.environment, input: false, errorsApart: false)
    else { return false }
    close(started.output)
    var status: Int32 = 0
    while waitpid(started.pid, &status, 0) < 0 && errno == EINTR {}
    // Exited (the low 7 bits 0) with status 0.
    return status & 0x7f == 0 && (status >> 8) & 0xff == 0
}

/// Runs a program with `input` on its standard input, and returns its exit status and output;
/// one that takes longer than `timeout` seconds is killed (status 9).
public func runProgram(
    _ executable: URL, _ arguments: [String], environment: [String: String] = [:], input: Data? = nil, timeout: Double
) async throws -> (status: Int32, stdout: String, stderr: String) {
    let program = try await ChildProcess(executable, arguments, environment: environment, input: input, errorsApart: true)
    let ending = await program.waitForEnd(orKillAfter: timeout)
    return (ending.status, program.output, program.errors)
}

/// Runs a Python script with the system's `python3`.
public func runPython(
    _ script: URL, arguments: [String] = [], environment: [String: String] = [:], input: Data? = nil, timeout: Double
) async throws -> (status: Int32, stdout: String, stderr: String) {
    try await runProgram(
        URL(fileURLWithPath: "/usr/bin/env"), ["python3", script.path] + arguments, environment: environment, input: input,
        timeout: timeout
    )
}
