import Tracing

/// `ExportTraceServiceRequest` (opentelemetry-proto, `collector/trace/v1`) in protobuf's binary
/// form, written by hand for the fields Islet's spans have: one resource, one scope, the spans
/// with their attributes, events, links and status.
enum OTLPTraceRequest {
    /// `ExportTraceServiceRequest { ResourceSpans resource_spans = 1 }`, with one
    /// `ResourceSpans { Resource resource = 1; ScopeSpans scope_spans = 2 }`, its
    /// `ScopeSpans { InstrumentationScope scope = 1; Span spans = 2 }`.
    static func encode(_ spans: [FinishedSpan], resource: [String: String]) -> [UInt8] {
        var scope = Message()
        scope.message(1) { $0.string(1, "islet") }
        for span in spans {
            scope.message(2) { encode(span, into: &$0) }
        }
        var resourceSpans = Message()
        resourceSpans.message(1) { message in
            for (key, value) in resource.sorted(by: { $0.key < $1.key }) {
                message.message(1) { keyValue(key, .string(value), into: &$0) }
            }
        }
        resourceSpans.message(2, scope)
        var request = Message()
        request.message(1, resourceSpans)
        return request.bytes
    }

    /// `Span`: trace_id 1, span_id 2, trace_state 3, parent_span_id 4, name 5, kind 6,
    /// start 7 and end 8 (fixed64 nanoseconds), attributes 9, events 11, links 13, status 15.
    private static func encode(_ span: FinishedSpan, into message: inout Message) {
        message.bytes(1, id(span.context.traceID))
        message.bytes(2, id(span.context.spanID))
        if let state = span.context.traceState, !state.isEmpty { message.string(3, state) }
        if let parent = span.parentSpanID { message.bytes(4, id(parent)) }
        message.string(5, span.name)
        message.varint(6, kind(span.kind))
        message.fixed64(7, span.start)
        message.fixed64(8, span.end)
        attributes(span.attributes, field: 9, into: &message)
        // Span.Event { time_unix_nano = 1; name = 2; attributes = 3 }
        for event in span.events {
            message.message(11) { encoded in
                encoded.fixed64(1, event.nanosecondsSinceEpoch)
                encoded.string(2, event.name)
                attributes(event.attributes, field: 3, into: &encoded)
            }
        }
        // Span.Link { trace_id = 1; span_id = 2 }; Status { message = 2; code = 3 }
        for link in span.links {
            message.message(13) { linked in
                linked.bytes(1, id(link.traceID))
                linked.bytes(2, id(link.spanID))
            }
        }
        if let status = span.status {
            message.message(15) { encoded in
                if let text = status.message { encoded.string(2, text) }
                encoded.varint(3, status.code == .ok ? 1 : 2)
            }
        }
    }

    private static func attributes(_ attributes: SpanAttributes, field: Int, into message: inout Message) {
        var pairs: [(String, SpanAttribute)] = []
        attributes.forEach { pairs.append(($0, $1)) }
        for (key, value) in pairs.sorted(by: { $0.0 < $1.0 }) {
            message.message(field) { keyValue(key, value, into: &$0) }
        }
    }

    /// `KeyValue { key = 1; AnyValue value = 2 }`.
    private static func keyValue(_ key: String, _ value: SpanAttribute, into message: inout Message) {
        message.string(1, key)
        message.message(2) { anyValue(value, into: &$0) }
    }

    /// `AnyValue`: string 1, bool 2, int 3, double 4, array 5.
    private static func anyValue(_ value: SpanAttribute, into message: inout Message) {
        switch value {
        case .string(let text): message.string(1, text)
        case .bool(let flag): message.varint(2, flag ? 1 : 0)
        case .int32(let number): message.varint(3, UInt64(bitPattern: Int64(number)))
        case .int64(let number): message.varint(3, UInt64(bitPattern: number))
        case .double(let number): message.fixed64(4, number.bitPattern)
        case .stringArray(let items): array(items.map(SpanAttribute.string), into: &message)
        case .int32Array(let items): array(items.map { .int64(Int64($0)) }, into: &message)
        case .int64Array(let items): array(items.map(SpanAttribute.int64), into: &message)
        case .doubleArray(let items): array(items.map(SpanAttribute.double), into: &message)
        case .boolArray(let items): array(items.map(SpanAttribute.bool), into: &message)
        case .stringConvertible(let item): message.string(1, item.description)
        case .stringConvertibleArray(let items): array(items.map { .string($0.description) }, into: &message)
        default: message.string(1, "\(value)")
        }
    }

    /// `ArrayValue { repeated AnyValue values = 1 }`, as field 5 of an `AnyValue`.
    private static func array(_ items: [SpanAttribute], into message: inout Message) {
        message.message(5) { array in
            for item in items { array.message(1) { anyValue(item, into: &$0) } }
        }
    }

    /// `Span.SpanKind`: internal 1, server 2, client 3, producer 4, consumer 5.
    private static func kind(_ kind: SpanKind) -> UInt64 {
        switch kind {
        case .internal: 1
        case .server: 2
        case .client: 3
        case .producer: 4
        case .consumer: 5
        }
    }

    private static func id(_ trace: TraceID) -> [UInt8] { bigEndian(trace.high) + bigEndian(trace.low) }
    private static func id(_ span: UInt64) -> [UInt8] { bigEndian(span) }

    private static func bigEndian(_ value: UInt64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * $0)) }
    }
}

/// A protobuf message being written: fields in order, nested messages length-prefixed.
struct Message {
    private(set) var bytes: [UInt8] = []

    mutating func varint(_ field: Int, _ value: UInt64) {
        tag(field, wireType: 0)
        raw(varint: value)
    }

    mutating func fixed64(_ field: Int, _ value: UInt64) {
        tag(field, wireType: 1)
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    mutating func bytes(_ field: Int, _ value: [UInt8]) {
        tag(field, wireType: 2)
        raw(varint: UInt64(value.count))
        bytes += value
    }

    mutating func string(_ field: Int, _ value: String) {
        bytes(field, Array(value.utf8))
    }

    mutating func message(_ field: Int, _ value: Message) {
        bytes(field, value.bytes)
    }

    mutating func message(_ field: Int, _ build: (inout Message) -> Void) {
        var nested = Message()
        build(&nested)
        message(field, nested)
    }

    private mutating func tag(_ field: Int, wireType: UInt64) {
        raw(varint: UInt64(field) << 3 | wireType)
    }

    private mutating func raw(varint value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }
}
