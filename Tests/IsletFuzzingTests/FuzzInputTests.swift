import Foundation
import IsletFCM
import IsletFuzzing
import IsletTestSupport
import Testing

/// The repository's `Fuzz` folder.
private let fuzzFolder = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Fuzz")

/// One committed input of one target.
struct FuzzInput: Sendable, CustomTestStringConvertible {
    /// The target's name.
    var target: String
    /// The path below `Fuzz/`.
    var path: String

    var testDescription: String { path }

    /// The inputs in `Fuzz/<folder>/<target>/`, for every target.
    static func all(in folder: String) -> [FuzzInput] {
        FuzzTarget.all.flatMap { target in
            FuzzInputs.files(at: fuzzFolder.appendingPathComponent("\(folder)/\(target.name)").path).map {
                FuzzInput(target: target.name, path: "\(folder)/\(target.name)/\($0.lastPathComponent)")
            }
        }
    }

    /// Runs the input through its target in a process of its own, the plain `fuzz-<target>`
    /// program built next to the test bundle (it replays the files it is given), so an input
    /// that traps fails its own test and no other.
    ///
    /// Not Swift Testing's exit tests: their first use starts a thread that waits for any child
    /// of the test process, and that spins on every child that has ended and is not yet
    /// collected — a `pg_ctl` whose server still holds its descriptors stays one for minutes.
    /// In the full suite that thread took a sixth of all the CPU time.
    func replay() async throws -> (ChildProcess.Termination, String) {
        let program = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("fuzz-\(target)")
        let process = try await ChildProcess(program, [fuzzFolder.appendingPathComponent(path).path])
        let termination = await process.waitForEnd(orKillAfter: 60)
        return (termination, process.output)
    }
}

/// Regression inputs whose fix is not merged yet, with what they wait for: `Fuzz/Regressions/PENDING`.
private let pending: [String: String] = {
    let text = (try? String(contentsOf: fuzzFolder.appendingPathComponent("Regressions/PENDING"), encoding: .utf8)) ?? ""
    var waiting: [String: String] = [:]
    for line in text.split(separator: "\n") where !line.hasPrefix("#") {
        let parts = line.split(separator: " ", maxSplits: 1)
        if let path = parts.first { waiting[String(path)] = parts.count > 1 ? String(parts[1]) : "" }
    }
    return waiting
}()

@Suite("Fuzz inputs", .hangDetector)
struct FuzzInputTests {
    /// Each input runs in a child process, so an input that traps fails its own test and no other.
    @Test(arguments: FuzzInput.all(in: "Corpus"))
    func seedInputKeepsEveryInvariant(_ input: FuzzInput) async throws {
        let (termination, output) = try await input.replay()
        #expect(termination == .exited(0), "\(input.path) \(termination): \(output)")
    }

    @Test(arguments: FuzzInput.all(in: "Regressions"))
    func foundInputStaysFixed(_ input: FuzzInput) async throws {
        let waiting = pending[input.path].map { " — listed in Regressions/PENDING, waiting for: \($0)" } ?? ""
        let (termination, output) = try await input.replay()
        #expect(termination == .exited(0), "\(input.path)\(waiting) \(termination): \(output)")
    }

    /// The token-request seeds reach every answer of the verifier: the valid ones are accepted,
    /// so the fuzzer starts past the signature check.
    @Test func tokenRequestSeedsReachTheVerifiersEveryAnswer() async throws {
        func outcome(_ seed: String) async throws -> String {
            let body = try Data(contentsOf: fuzzFolder.appendingPathComponent("Corpus/token-request/\(seed).form"))
            let request = try TokenRequest(body: body)
            switch await TokenRequests.verify(request.assertion) {
            case .success: return "accepted"
            case .failure(let refusal): return refusal.error
            }
        }
        #expect(try await outcome("valid") == "accepted")
        #expect(try await outcome("google-audience") == "accepted")
        #expect(try await outcome("cloud-platform-scope") == "accepted")
        #expect(try await outcome("expired") == "invalid_grant")
        #expect(try await outcome("wrong-scope") == "invalid_scope")
        #expect(try await outcome("unknown-kid") == "invalid_client")
        #expect(try await outcome("bad-signature") == "invalid_grant")
    }

    @Test func everyTargetHasSeedsAndAProgram() {
        for target in FuzzTarget.all {
            #expect(!FuzzInputs.files(at: fuzzFolder.appendingPathComponent("Corpus/\(target.name)").path).isEmpty, "\(target.name)")
            #expect(
                FileManager.default.fileExists(atPath: fuzzFolder.appendingPathComponent("Targets/\(target.name)/main.swift").path),
                "\(target.name)"
            )
        }
    }

    /// Issue 27, the README walked: `Fuzz/run` stopped fuzz-delivery-credential at once with
    /// "ParseDictionaryFile: error in line 23" — its dictionary wrote a newline as `\n`, an escape
    /// libFuzzer does not read. Every entry is what libFuzzer's ParseOneDictionaryEntry takes:
    /// an optional name, then a quoted string of printable characters whose only escapes are
    /// `\\`, `\"` and `\xAB`.
    @Test func everyDictionaryEntryIsOneLibFuzzerReads() throws {
        let folder = fuzzFolder.appendingPathComponent("Dictionaries")
        for file in try FileManager.default.contentsOfDirectory(atPath: folder.path) where file.hasSuffix(".dict") {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let entry = line.trimmingCharacters(in: .whitespaces)
                if entry.isEmpty || entry.hasPrefix("#") { continue }
                #expect(Self.libFuzzerReads(entry), "\(file), line \(index + 1): \(entry)")
            }
        }
    }

    /// Whether libFuzzer's dictionary parser takes `entry` (a line without its surrounding spaces).
    private static func libFuzzerReads(_ entry: String) -> Bool {
        let bytes = Array(entry.utf8)
        guard bytes.count >= 3, bytes.last == UInt8(ascii: "\""), let open = bytes.firstIndex(of: UInt8(ascii: "\"")),
            open < bytes.count - 1
        else { return false }
        let body = bytes[(open + 1)..<(bytes.count - 1)]
        var position = body.startIndex
        let hex = { (byte: UInt8) in (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte | 0x20) }
        while position < body.endIndex {
            let byte = body[position]
            guard (0x20...0x7E).contains(byte) || byte == 0x09 else { return false }
            if byte == UInt8(ascii: "\\") {
                let rest = body[(position + 1)...]
                if let next = rest.first, next == UInt8(ascii: "\\") || next == UInt8(ascii: "\"") {
                    position += 2
                    continue
                }
                if rest.count >= 3, rest[rest.startIndex] == UInt8(ascii: "x"), hex(rest[rest.startIndex + 1]), hex(rest[rest.startIndex + 2]) {
                    position += 4
                    continue
                }
                return false
            }
            position += 1
        }
        return true
    }

    @Test func pendingListNamesOnlyRegressionInputs() {
        let regressions = Set(FuzzInput.all(in: "Regressions").map(\.path))
        for path in pending.keys {
            #expect(regressions.contains(path), "Regressions/PENDING lists \(path), which is not there")
        }
    }
}
