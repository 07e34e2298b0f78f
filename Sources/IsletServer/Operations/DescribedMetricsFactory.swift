import CoreMetrics
import Foundation
import Prometheus

/// swift-metrics' factory for what the libraries Islet runs record (Hummingbird's requests), in
/// `ServerMetrics.registry`: Prometheus's names (`_total`, `_seconds`) and a help text for each,
/// which `PrometheusMetricsFactory` leaves out (`promtool check metrics` refuses a metric
/// without one). A metric no entry describes is still exported, with a help text saying which
/// library's name it is.
public struct DescribedMetricsFactory: MetricsFactory {
    /// A name as swift-metrics' callers give it, as Prometheus shows it, and what it measures.
    struct Description {
        var name: String
        var help: String
    }

    /// Hummingbird's `MetricsMiddleware`, by the labels it records under.
    static let described: [String: Description] = [
        "hb.requests": Description(name: "hb_requests_total", help: "HTTP requests answered, by route, method and status."),
        "hb.request.errors": Description(
            name: "hb_request_errors_total", help: "HTTP requests answered with an error thrown by a handler, by route, method and status."
        ),
        "http.server.request.duration": Description(
            name: "http_server_request_duration_seconds", help: "How long HTTP requests took, from their head to the end of their answer's body."
        ),
        "http.server.active_requests": Description(name: "http_server_active_requests", help: "HTTP requests being answered now, by method."),
    ]

    /// The metrics' registry, as `GET /metrics` emits it.
    public let registry: PrometheusCollectorRegistry
    private let plain: PrometheusMetricsFactory

    public init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
        plain = PrometheusMetricsFactory(registry: registry)
    }

    /// The name a label has in Prometheus, and its help text.
    static func descriptor(_ label: String, unit: String = "") -> MetricNameDescriptor {
        let description = described[label] ?? Description(
            name: label.replacingOccurrences(of: ".", with: "_") + (unit.isEmpty ? "" : "_\(unit)"),
            help: "\(label), recorded by a library Islet runs (swift-metrics)."
        )
        return MetricNameDescriptor(metricName: description.name, unitName: "", helpText: description.help)
    }

    public func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        registry.makeCounter(descriptor: Self.descriptor(label, unit: "total"), labels: dimensions)
    }

    public func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        registry.makeCounter(descriptor: Self.descriptor(label, unit: "total"), labels: dimensions)
    }

    public func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        guard aggregate else { return registry.makeGauge(descriptor: Self.descriptor(label), labels: dimensions) }
        return registry.makeValueHistogram(descriptor: Self.descriptor(label), labels: dimensions, buckets: plain.defaultValueHistogramBuckets)
    }

    public func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        registry.makeGauge(descriptor: Self.descriptor(label), labels: dimensions)
    }

    public func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        registry.makeDurationHistogram(
            descriptor: Self.descriptor(label, unit: "seconds"), labels: dimensions, buckets: plain.defaultDurationHistogramBuckets
        )
    }

    public func destroyCounter(_ handler: any CounterHandler) { plain.destroyCounter(handler) }
    public func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) { plain.destroyFloatingPointCounter(handler) }
    public func destroyRecorder(_ handler: any RecorderHandler) { plain.destroyRecorder(handler) }
    public func destroyMeter(_ handler: any MeterHandler) { plain.destroyMeter(handler) }
    public func destroyTimer(_ handler: any TimerHandler) { plain.destroyTimer(handler) }
}
