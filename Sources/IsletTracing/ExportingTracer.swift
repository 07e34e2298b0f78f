import Instrumentation
import Logging
import Tracing

/// Islet's tracer (docs/operations.md §1): spans with W3C trace-context ids, propagated in
/// `traceparent` and `tracestate`, sampled by `TraceSettings.sampler`, and — when sampled —
/// exported in batches over OTLP/HTTP by `SpanExporter`.
///
/// It is Islet's own rather than swift-otel's: that one's OTLP exporter needs SwiftProtobuf,
/// whose two default traits SwiftPM 6.3 passes as `-D` flags in a different order at each new
/// build plan — any new shell — and so rebuilt its 94 files at every other `swift run`
/// (swiftlang/swift-package-manager#10525, fixed in 6.4). A tracer, a batch and the few messages
/// of `ExportTraceServiceRequest` are a few hundred lines.
public struct ExportingTracer: Tracer {
    public typealias Span = RecordedSpan

    private let sampler: Sampler
    private let exporter: SpanExporter?

    /// A tracer exporting through `exporter` (none: spans are made and propagated, never sent).
    public init(sampler: Sampler, exporter: SpanExporter?) {
        self.sampler = sampler
        self.exporter = exporter
    }

    public func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> ServiceContext, ofKind kind: SpanKind, at instant: @autoclosure () -> Instant,
        function: String, file fileID: String, line: UInt
    ) -> RecordedSpan {
        var context = context()
        let parent = context.spanContext
        let trace = parent?.traceID ?? TraceID.random()
        var generator = SystemRandomNumberGenerator()
        var spanID: UInt64 = 0
        while spanID == 0 { spanID = generator.next() }
        let spanContext = SpanContext(
            traceID: trace, spanID: spanID, sampled: sampler.samples(trace, parent: parent), traceState: parent?.traceState
        )
        context.spanContext = spanContext
        return RecordedSpan(
            name: operationName, context: context, spanContext: spanContext, parent: parent?.spanID, kind: kind,
            start: instant().nanosecondsSinceEpoch, exporter: exporter
        )
    }

    public func forceFlush() {}

    public func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract)
    where Extract.Carrier == Carrier {
        guard let traceparent = extractor.extract(key: "traceparent", from: carrier) else { return }
        let state = extractor.extract(key: "tracestate", from: carrier)
        if let remote = SpanContext(traceparent: traceparent.trimmingCharacters(in: " \t"), traceState: state) {
            context.spanContext = remote
        }
    }

    public func inject<Carrier, Inject: Injector>(_ context: ServiceContext, into carrier: inout Carrier, using injector: Inject)
    where Inject.Carrier == Carrier {
        guard let span = context.spanContext else { return }
        injector.inject(span.traceparent, forKey: "traceparent", into: &carrier)
        if let state = span.traceState, !state.isEmpty { injector.inject(state, forKey: "tracestate", into: &carrier) }
    }

    /// Log metadata while a span is active: `trace_id`, `span_id` and `trace_flags`, as
    /// OpenTelemetry's log correlation names them.
    public static let loggingMetadata = Logger.MetadataProvider {
        guard let span = ServiceContext.current?.spanContext else { return [:] }
        return ["trace_id": "\(span.traceID.hex)", "span_id": "\(hex(span.spanID, digits: 16))", "trace_flags": "\(span.sampled ? "1" : "0")"]
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: String) -> String {
        var text = Substring(self)
        while let first = text.first, set.contains(first) { text = text.dropFirst() }
        while let last = text.last, set.contains(last) { text = text.dropLast() }
        return String(text)
    }
}
