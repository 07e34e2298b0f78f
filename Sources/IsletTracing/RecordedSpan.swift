import Synchronization
import Tracing

/// A span of Islet's tracer: what happened to it is kept until it ends, then — when its trace
/// is sampled — handed to the exporter once, as a `FinishedSpan`.
public final class RecordedSpan: Span {
    public let context: ServiceContext
    /// Its identity, also in `context`.
    let spanContext: SpanContext
    private let parentSpanID: UInt64?
    private let kind: SpanKind
    private let start: UInt64
    private let exporter: SpanExporter?

    private struct State {
        var name: String
        var attributes: SpanAttributes = [:]
        var status: SpanStatus?
        var events: [SpanEvent] = []
        var links: [SpanLink] = []
        var ended = false
    }
    private let state: Mutex<State>

    init(
        name: String, context: ServiceContext, spanContext: SpanContext, parent: UInt64?, kind: SpanKind, start: UInt64,
        exporter: SpanExporter?
    ) {
        self.context = context
        self.spanContext = spanContext
        parentSpanID = parent
        self.kind = kind
        self.start = start
        self.exporter = spanContext.sampled ? exporter : nil
        state = Mutex(State(name: name))
    }

    public var operationName: String {
        get { state.withLock { $0.name } }
        set { state.withLock { $0.name = newValue } }
    }

    public var attributes: SpanAttributes {
        get { state.withLock { $0.attributes } }
        set { state.withLock { $0.attributes = newValue } }
    }

    public var isRecording: Bool { exporter != nil && !state.withLock(\.ended) }

    public func setStatus(_ status: SpanStatus) {
        state.withLock { state in
            // OK is final; an error does not replace it (the specification's rule).
            if state.status?.code != .ok { state.status = status }
        }
    }

    public func addEvent(_ event: SpanEvent) {
        state.withLock { $0.events.append(event) }
    }

    public func recordError<Instant: TracerInstant>(_ error: any Error, attributes: SpanAttributes, at instant: @autoclosure () -> Instant) {
        var attributes = attributes
        attributes["exception.type"] = "\(type(of: error))"
        attributes["exception.message"] = "\(error)"
        addEvent(SpanEvent(name: "exception", at: instant(), attributes: attributes))
    }

    public func addLink(_ link: SpanLink) {
        state.withLock { $0.links.append(link) }
    }

    public func end<Instant: TracerInstant>(at instant: @autoclosure () -> Instant) {
        let end = instant().nanosecondsSinceEpoch
        let finished = state.withLock { state -> FinishedSpan? in
            guard !state.ended else { return nil }
            state.ended = true
            return FinishedSpan(
                context: spanContext, parentSpanID: parentSpanID, name: state.name, kind: kind, start: start, end: max(end, start),
                attributes: state.attributes, status: state.status, events: state.events,
                links: state.links.compactMap { $0.context.spanContext }
            )
        }
        if let finished { exporter?.enqueue(finished) }
    }
}

/// A span as it is exported.
struct FinishedSpan: Sendable {
    var context: SpanContext
    var parentSpanID: UInt64?
    var name: String
    var kind: SpanKind
    /// Nanoseconds since 1970.
    var start: UInt64
    var end: UInt64
    var attributes: SpanAttributes
    var status: SpanStatus?
    var events: [SpanEvent]
    var links: [SpanContext]
}
