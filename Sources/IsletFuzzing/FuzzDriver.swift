import Foundation
import Synchronization

#if ISLET_FUZZING
import CLibFuzzer
#endif

/// The body of every `fuzz-<name>` executable.
///
/// In a fuzz build (`ISLET_FUZZ=1`) it hands the command line to libFuzzer's driver, which
/// takes libFuzzer's flags and corpus folders. In a plain build it replays the files and
/// folders it is given, so the executables build, link and stay useful without libFuzzer:
/// `swift run fuzz-rules Fuzz/Regressions/rules`.
public enum FuzzDriver {
    /// Runs `target` as the program, and exits.
    public static func main(_ target: FuzzTarget) -> Never {
        #if ISLET_FUZZING
        // libFuzzer's callback is a C function and cannot capture the target.
        running.withLock { $0 = target }
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(
            LLVMFuzzerRunDriver(&argc, &argv) { bytes, count in
                let target = running.withLock { $0 }!
                let input = bytes.map { Data(bytes: $0, count: count) } ?? Data()
                do {
                    try target.run(input)
                } catch {
                    // A trap is what libFuzzer recognises as a crash: it writes the input out.
                    fatalError("fuzz-\(target.name): \(error)")
                }
                return 0
            }
        )
        #else
        exit(replay(target, paths: Array(CommandLine.arguments.dropFirst())))
        #endif
    }

    /// Runs every file named, or found in a folder named, through `target`; the exit status is
    /// 1 if any broke an invariant (a trap ends the process with the signal's status).
    static func replay(_ target: FuzzTarget, paths: [String]) -> Int32 {
        guard !paths.isEmpty else {
            print("usage: fuzz-\(target.name) FILE-OR-FOLDER…  (a plain build replays inputs; Fuzz/run fuzzes)")
            return 2
        }
        var failed = 0
        for file in paths.flatMap(FuzzInputs.files(at:)) {
            do {
                try target.run(try Data(contentsOf: file))
                print("ok      \(file.path)")
            } catch {
                failed += 1
                print("FAILED  \(file.path): \(error)")
            }
        }
        return failed == 0 ? 0 : 1
    }
}

#if ISLET_FUZZING
/// The target libFuzzer's callback runs: set once, before the driver starts.
private let running = Mutex<FuzzTarget?>(nil)
#endif

/// Where a target's committed inputs are, and how to list them.
public enum FuzzInputs {
    /// The files at `path`: the file itself, or every file in the folder (not hidden, not
    /// README or PENDING lists), sorted.
    public static func files(at path: String) -> [URL] {
        let url = URL(fileURLWithPath: path)
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else { return [] }
        guard isFolder.boolValue else { return [url] }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        return names.filter { !$0.hasPrefix(".") && !isNotes($0) }.sorted().map { url.appendingPathComponent($0) }
    }

    /// Notes kept beside the inputs, which are not inputs.
    static func isNotes(_ name: String) -> Bool {
        name.hasSuffix(".md") || name == "PENDING"
    }
}
