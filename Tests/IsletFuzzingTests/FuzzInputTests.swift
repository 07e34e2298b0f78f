import Foundation
import IsletFuzzing
import Testing

/// The repository's `Fuzz` folder.
private let fuzzFolder = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Fuzz")

/// One committed input of one target.
struct FuzzInput: Codable, Sendable, CustomTestStringConvertible {
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

    /// Runs the input through its target: what a child process of an exit test does.
    func run() throws {
        let target = FuzzTarget.all.first { $0.name == self.target }!
        try target.run(try Data(contentsOf: fuzzFolder.appendingPathComponent(path)))
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

@Suite("Fuzz inputs")
struct FuzzInputTests {
    /// Each input runs in a child process, so an input that traps fails its own test and no other.
    @Test(arguments: FuzzInput.all(in: "Corpus"))
    func seedInputKeepsEveryInvariant(_ input: FuzzInput) async {
        await #expect(processExitsWith: .success, "\(input.path)") { [input] in
            try input.run()
        }
    }

    @Test(arguments: FuzzInput.all(in: "Regressions"))
    func foundInputStaysFixed(_ input: FuzzInput) async {
        let waiting = pending[input.path].map { " — listed in Regressions/PENDING, waiting for: \($0)" } ?? ""
        await #expect(processExitsWith: .success, "\(input.path)\(waiting)") { [input] in
            try input.run()
        }
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

    @Test func pendingListNamesOnlyRegressionInputs() {
        let regressions = Set(FuzzInput.all(in: "Regressions").map(\.path))
        for path in pending.keys {
            #expect(regressions.contains(path), "Regressions/PENDING lists \(path), which is not there")
        }
    }
}
