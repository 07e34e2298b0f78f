import Foundation

/// One fuzz target: a function over bytes that must return for every input.
///
/// libFuzzer calls `run` with each input it makes (`fuzz-<name>`, built by `Fuzz/run`);
/// `swift test` calls it with every committed seed and regression input
/// (`Fuzz/Corpus/<name>`, `Fuzz/Regressions/<name>`). A trap inside is a finding by itself; a
/// broken invariant throws `FuzzFailure`, which the driver turns into a trap so that libFuzzer
/// keeps the input. docs/fuzzing.md lists what each target checks.
public struct FuzzTarget: Sendable {
    /// The target's name: its executable is `fuzz-<name>`, its inputs are in `Fuzz/*/<name>`.
    public let name: String
    /// Runs one input, throwing when the code under test broke an invariant.
    public let run: @Sendable (Data) throws(FuzzFailure) -> Void

    /// Creates a target.
    public init(name: String, run: @escaping @Sendable (Data) throws(FuzzFailure) -> Void) {
        self.name = name
        self.run = run
    }

    /// Every target, in the order `Fuzz/run` runs them.
    public static let all: [FuzzTarget] = [
        .requestBody, .layout, .renderer, .apnsPush, .providerToken, .serverSentEvents, .rules, .deliveryCredential, .fcmSend, .androidInputs, .tokenRequest,
        .webhookInputs,
    ]
}

/// An invariant the code under test broke on one input, with what was expected.
public struct FuzzFailure: Error, CustomStringConvertible {
    /// What went wrong, for the person reading the finding.
    public var description: String

    /// Creates a failure.
    public init(_ description: String) {
        self.description = description
    }
}

/// Fails the input with `message` unless `condition` holds.
func expect(_ condition: Bool, _ message: @autoclosure () -> String) throws(FuzzFailure) {
    if !condition { throw FuzzFailure(message()) }
}
