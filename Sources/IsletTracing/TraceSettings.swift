import Foundation

/// How spans are sampled, batched and sent: `telemetry.otlpEndpoint`, refined by the
/// OpenTelemetry SDK's standard variables, read and checked once at start — a value that would
/// make the exporter misbehave later (a port past 65535, a protocol it does not speak, a delay of
/// a thousand years) stops the start, by its variable's name.
///
/// | variable | default |
/// |---|---|
/// | `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (as it is), else `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces` | `telemetry.otlpEndpoint` + `/v1/traces` |
/// | `OTEL_EXPORTER_OTLP_[TRACES_]HEADERS` (`key=value,…`, values percent-encoded) | none |
/// | `OTEL_EXPORTER_OTLP_[TRACES_]TIMEOUT` (ms, 1 … 60000) | 3000 |
/// | `OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL` | `http/protobuf`, the only one |
/// | `OTEL_SERVICE_NAME` | `islet` |
/// | `OTEL_RESOURCE_ATTRIBUTES` (`key=value,…`) | none |
/// | `OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG` | `parentbased_always_on` |
/// | `OTEL_BSP_SCHEDULE_DELAY` (ms, 1 … 60000) | 5000 |
/// | `OTEL_BSP_MAX_QUEUE_SIZE` (1 … 1000000) | 2048 |
/// | `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` (1 … the queue) | 512 |
public struct TraceSettings: Sendable, Equatable {
    /// Where spans are posted, `…/v1/traces`.
    public var endpoint: String
    /// Headers sent with every export (a collector's API key).
    public var headers: [String: String] = [:]
    /// How long one export may take.
    public var timeout: Duration = .seconds(3)
    /// The resource's attributes: `service.name` and those of `OTEL_RESOURCE_ATTRIBUTES`.
    public var resource: [String: String] = ["service.name": "islet"]
    public var sampler: Sampler = .parentBased(root: .alwaysOn)
    /// How long a finished span may wait before it is sent.
    public var scheduleDelay: Duration = .seconds(5)
    /// Finished spans held at most; beyond, new ones are dropped (and counted in the log).
    public var maxQueueSize = 2048
    /// Spans sent at most in one request.
    public var maxBatchSize = 512

    /// A setting that cannot be used, by its variable's (or key's) name.
    public struct Problem: Error, Equatable, CustomStringConvertible {
        public var variable: String
        public var problem: String
        public var description: String { "Configuration \(variable): \(problem)" }
    }

    public init(endpoint: String) {
        self.endpoint = endpoint
    }

    /// The settings for `otlpEndpoint` (`telemetry.otlpEndpoint`) and `environment`.
    public init(otlpEndpoint: String, environment: [String: String]) throws(Problem) {
        let (source, base, path): (String, String, String) =
            if let traces = environment["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] {
                ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", traces, "")
            } else if let shared = environment["OTEL_EXPORTER_OTLP_ENDPOINT"] {
                ("OTEL_EXPORTER_OTLP_ENDPOINT", shared, "v1/traces")
            } else {
                ("telemetry.otlpEndpoint", otlpEndpoint, "v1/traces")
            }
        try Self.checkAddress(base, source: source)
        self.init(endpoint: path.isEmpty ? base : base.hasSuffix("/") ? base + path : base + "/" + path)
        let reader = Reader(environment: environment)
        if let text = reader.signal("PROTOCOL"), text.value != "http/protobuf" {
            throw Problem(variable: text.name, problem: "Islet sends traces as http/protobuf only, not \(text.value.prefix(40).debugDescription).")
        }
        if let text = reader.signal("HEADERS") { headers = try Self.pairs(text.value, variable: text.name, decoding: true) }
        if let milliseconds = try reader.signalInteger("TIMEOUT", in: 1...60_000) { timeout = .milliseconds(milliseconds) }
        if let attributes = environment["OTEL_RESOURCE_ATTRIBUTES"] {
            resource.merge(try Self.pairs(attributes, variable: "OTEL_RESOURCE_ATTRIBUTES", decoding: true)) { _, given in given }
        }
        if let name = environment["OTEL_SERVICE_NAME"], !name.isEmpty { resource["service.name"] = name }
        sampler = try Sampler(name: environment["OTEL_TRACES_SAMPLER"], argument: environment["OTEL_TRACES_SAMPLER_ARG"])
        if let milliseconds = try reader.integer("OTEL_BSP_SCHEDULE_DELAY", in: 1...60_000) { scheduleDelay = .milliseconds(milliseconds) }
        maxQueueSize = try reader.integer("OTEL_BSP_MAX_QUEUE_SIZE", in: 1...1_000_000) ?? maxQueueSize
        maxBatchSize = try reader.integer("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", in: 1...maxQueueSize) ?? min(maxBatchSize, maxQueueSize)
    }

    /// Refuses an address that is not `http(s)://host[:port]…` with a port from 1 to 65535: the
    /// HTTP client traps on a port past it, at its first request.
    public static func checkAddress(_ address: String, source: String) throws(Problem) {
        guard let url = URL(string: address), ["http", "https"].contains(url.scheme ?? ""), url.host?.isEmpty == false,
            url.port.map({ (1...65535).contains($0) }) ?? true
        else {
            throw Problem(
                variable: source,
                problem: "an OTLP/HTTP collector's address is http(s)://host:port, with a port from 1 to 65535; \(address.prefix(200).debugDescription) is not one."
            )
        }
    }

    /// `key=value,key=value`, as the OpenTelemetry variables write lists (values percent-encoded).
    private static func pairs(_ text: String, variable: String, decoding: Bool) throws(Problem) -> [String: String] {
        var pairs: [String: String] = [:]
        for item in text.split(separator: ",") where !item.allSatisfy(\.isWhitespace) {
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = parts[0].trimmingCharacters(in: .whitespaces)
            guard parts.count == 2, !key.isEmpty, let value = String(parts[1]).trimmingCharacters(in: .whitespaces).removingPercentEncoding,
                value.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F })
            else {
                throw Problem(variable: variable, problem: "a list of key=value pairs, separated by commas; \(item.prefix(60).debugDescription) is not one.")
            }
            pairs[key] = value
        }
        return pairs
    }

    /// Reads the variables, the per-signal one first.
    private struct Reader {
        let environment: [String: String]

        func signal(_ suffix: String) -> (name: String, value: String)? {
            for name in ["OTEL_EXPORTER_OTLP_TRACES_\(suffix)", "OTEL_EXPORTER_OTLP_\(suffix)"] {
                if let value = environment[name] { return (name, value.trimmingCharacters(in: .whitespaces)) }
            }
            return nil
        }

        func signalInteger(_ suffix: String, in range: ClosedRange<Int>) throws(Problem) -> Int? {
            guard let (name, value) = signal(suffix) else { return nil }
            return try Self.integer(value, name: name, in: range)
        }

        func integer(_ name: String, in range: ClosedRange<Int>) throws(Problem) -> Int? {
            guard let value = environment[name] else { return nil }
            return try Self.integer(value.trimmingCharacters(in: .whitespaces), name: name, in: range)
        }

        private static func integer(_ value: String, name: String, in range: ClosedRange<Int>) throws(Problem) -> Int {
            guard let number = Int(value), range.contains(number) else {
                throw Problem(variable: name, problem: "a whole number from \(range.lowerBound) to \(range.upperBound); \(value.prefix(40).debugDescription) is not one.")
            }
            return number
        }
    }
}
