import ServiceContextModule

/// A span's identity as W3C trace-context carries it (`traceparent`): its trace, itself, and
/// whether the trace is sampled. It rides in the `ServiceContext` of the work it spans, so a
/// child span, a log line and an outgoing request find their parent.
public struct SpanContext: Sendable, Hashable {
    /// The trace: 16 bytes, never all zero.
    public var traceID: TraceID
    /// The span: 8 bytes, never all zero.
    public var spanID: UInt64
    /// Whether the trace is recorded and exported (the `sampled` flag).
    public var sampled: Bool
    /// The `tracestate` it came with, passed on unchanged.
    public var traceState: String?

    /// The `traceparent` header: `00-<trace id>-<span id>-<flags>`.
    public var traceparent: String {
        "00-\(traceID.hex)-\(hex(spanID, digits: 16))-\(sampled ? "01" : "00")"
    }

    /// Reads a `traceparent` (version 00, or a later one read as 00 as the specification asks);
    /// `nil` for anything else, which then starts a trace of its own.
    public init?(traceparent: String, traceState: String? = nil) {
        let parts = traceparent.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count >= 4, parts[0].count == 2, parts[0] != "ff", UInt8(parts[0], radix: 16) != nil,
            parts[0] != "00" || parts.count == 4,
            parts[1].count == 32, parts[2].count == 16, parts[3].count == 2,
            parts.prefix(4).allSatisfy({ $0.allSatisfy(\.isHexDigit) && $0.lowercased() == $0 }),
            let high = UInt64(parts[1].prefix(16), radix: 16), let low = UInt64(parts[1].suffix(16), radix: 16),
            let span = UInt64(parts[2], radix: 16), let flags = UInt8(parts[3], radix: 16),
            high | low != 0, span != 0
        else { return nil }
        traceID = TraceID(high: high, low: low)
        spanID = span
        sampled = flags & 1 == 1
        self.traceState = traceState
    }

    public init(traceID: TraceID, spanID: UInt64, sampled: Bool, traceState: String? = nil) {
        self.traceID = traceID
        self.spanID = spanID
        self.sampled = sampled
        self.traceState = traceState
    }
}

/// A trace's 16-byte id, as two 64-bit halves (big-endian: `high` first on the wire).
public struct TraceID: Sendable, Hashable {
    public var high: UInt64
    public var low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// 32 lowercase hexadecimal digits.
    public var hex: String { IsletTracing.hex(high, digits: 16) + IsletTracing.hex(low, digits: 16) }

    /// A new random id.
    static func random() -> TraceID {
        var generator = SystemRandomNumberGenerator()
        while true {
            let id = TraceID(high: generator.next(), low: generator.next())
            if id.high | id.low != 0 { return id }
        }
    }
}

/// `value` as `digits` lowercase hexadecimal digits.
func hex(_ value: UInt64, digits: Int) -> String {
    let text = String(value, radix: 16)
    return String(repeating: "0", count: max(0, digits - text.count)) + text
}

extension ServiceContext {
    /// The span this context is in, if any.
    public var spanContext: SpanContext? {
        get { self[SpanContextKey.self] }
        set { self[SpanContextKey.self] = newValue }
    }
}

private enum SpanContextKey: ServiceContextKey {
    typealias Value = SpanContext
    static let nameOverride: String? = "otel-span-context"
}
