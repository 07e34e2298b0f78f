import Instrumentation
import ServiceContextModule
import Tracing

/// A span's context carried as W3C trace-context's `traceparent` (docs/operations.md §1): how a
/// delivery keeps the trace of the change that wrote it, in its outbox row, for whichever node
/// sends it. With no tracer bootstrapped (`telemetry.otlpEndpoint` unset) the instrument is
/// the no-op one: `current()` is `nil` and nothing is stored.
enum TraceParent {
    /// The `traceparent` of the span in the current context, if there is one.
    static func current() -> String? {
        guard let context = ServiceContext.current else { return nil }
        var carrier: [String: String] = [:]
        InstrumentationSystem.instrument.inject(context, into: &carrier, using: Carrier())
        return carrier["traceparent"]
    }

    /// A context whose span is the one `traceparent` names (a top-level one when `nil`).
    static func context(_ traceparent: String?) -> ServiceContext {
        var context = ServiceContext.topLevel
        if let traceparent {
            InstrumentationSystem.instrument.extract(["traceparent": traceparent], into: &context, using: Carrier())
        }
        return context
    }

    private struct Carrier: Injector, Extractor {
        func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) { carrier[key] = value }
        func extract(key: String, from carrier: [String: String]) -> String? { carrier[key] }
    }
}
