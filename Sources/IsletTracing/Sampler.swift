import Foundation

/// Which traces are recorded and exported, as `OTEL_TRACES_SAMPLER` names them: every one, none,
/// a fraction chosen by trace id, or — the default — whatever the caller's trace decided
/// (`parentbased_…`), with a rule for traces that start here.
public indirect enum Sampler: Sendable, Equatable {
    case alwaysOn
    case alwaysOff
    /// The traces whose id falls in the first `ratio` of ids (0 … 1): the same decision on
    /// every node for one trace.
    case traceIDRatio(Double)
    case parentBased(root: Sampler)

    /// The sampler `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG` name (nil: the default).
    init(name: String?, argument: String?) throws(TraceSettings.Problem) {
        func ratio() throws(TraceSettings.Problem) -> Double {
            guard let argument else { return 1 }
            guard let ratio = Double(argument.trimmingCharacters(in: .whitespaces)), (0...1).contains(ratio) else {
                throw TraceSettings.Problem(variable: "OTEL_TRACES_SAMPLER_ARG", problem: "a ratio from 0 to 1; \(argument.prefix(40).debugDescription) is not one.")
            }
            return ratio
        }
        switch name?.trimmingCharacters(in: .whitespaces).lowercased() {
        case nil, "", "parentbased_always_on": self = .parentBased(root: .alwaysOn)
        case "always_on": self = .alwaysOn
        case "always_off": self = .alwaysOff
        case "traceidratio": self = .traceIDRatio(try ratio())
        case "parentbased_always_off": self = .parentBased(root: .alwaysOff)
        case "parentbased_traceidratio": self = .parentBased(root: .traceIDRatio(try ratio()))
        case let other?:
            throw TraceSettings.Problem(
                variable: "OTEL_TRACES_SAMPLER",
                problem: "one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio; not \(other.prefix(40).debugDescription)."
            )
        }
    }

    /// Whether a new span of `trace`, whose parent is `parent` (nil at a trace's root), is sampled.
    func samples(_ trace: TraceID, parent: SpanContext?) -> Bool {
        switch self {
        case .alwaysOn: true
        case .alwaysOff: false
        case .traceIDRatio(let ratio):
            // The specification's rule: the trace id's lower 8 bytes against the ratio of 2⁶³.
            ratio >= 1 || Double(trace.low >> 1) < ratio * 0x1p63
        case .parentBased(let root): parent?.sampled ?? root.samples(trace, parent: nil)
        }
    }
}
