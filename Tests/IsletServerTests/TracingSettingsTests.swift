import Foundation
import IsletTracing
import IsletTestSupport
import Testing
import Tracing

/// Islet's tracer (`IsletTracing`): its settings as the OpenTelemetry variables give them, checked
/// at start; W3C trace-context; sampling. The export itself is checked against a real OTLP
/// receiver (`TracingTests`).
@Suite("Traces: settings and context", .hangDetector)
struct TracingSettingsTests {
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` with a port past 65535 passed the check of
    /// `telemetry.otlpEndpoint` and killed the server at its first export (issue 41). The address
    /// the exporter uses is the one checked, and a bad one is refused at start by its name.
    @Test func theTracesEndpointIsTheOneTheExporterUsesAndIsChecked() throws {
        let configured = "http://collector:4318"
        #expect(try TraceSettings(otlpEndpoint: configured, environment: [:]).endpoint == "http://collector:4318/v1/traces")
        #expect(try TraceSettings(otlpEndpoint: configured, environment: ["OTEL_EXPORTER_OTLP_ENDPOINT": "https://other:4318/"]).endpoint == "https://other:4318/v1/traces")
        #expect(
            try TraceSettings(otlpEndpoint: configured, environment: [
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:99999", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://traces:4318/spans",
            ]).endpoint == "http://traces:4318/spans"
        )
        for (variable, value) in [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:99999"), ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:0"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318"), ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:70000/v1/traces"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "grpc://collector:4317"),
        ] {
            #expect(throws: TraceSettings.Problem.self, "\(variable)=\(value)") {
                _ = try TraceSettings(otlpEndpoint: configured, environment: [variable: value])
            }
            do {
                _ = try TraceSettings(otlpEndpoint: configured, environment: [variable: value])
            } catch {
                #expect(error.variable == variable)
            }
        }
    }

    /// Every other variable the exporter reads is read here, in range, or refused by its name.
    @Test func theOpenTelemetryVariablesAreReadAndCheckedByName() throws {
        let settings = try TraceSettings(otlpEndpoint: "http://collector:4318", environment: [
            "OTEL_EXPORTER_OTLP_HEADERS": "x-honeycomb-team=abc%3D%3D, x-dataset = islet", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "1500",
            "OTEL_SERVICE_NAME": "islet-a", "OTEL_RESOURCE_ATTRIBUTES": "service.instance.id=a,deployment.environment=prod",
            "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.25", "OTEL_BSP_SCHEDULE_DELAY": "200",
            "OTEL_BSP_MAX_QUEUE_SIZE": "100", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "10", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        ])
        #expect(settings.headers == ["x-honeycomb-team": "abc==", "x-dataset": "islet"])
        #expect(settings.timeout == .milliseconds(1500))
        #expect(settings.resource == ["service.name": "islet-a", "service.instance.id": "a", "deployment.environment": "prod"])
        #expect(settings.sampler == .parentBased(root: .traceIDRatio(0.25)))
        #expect(settings.scheduleDelay == .milliseconds(200) && settings.maxQueueSize == 100 && settings.maxBatchSize == 10)
        for (variable, value) in [
            ("OTEL_BSP_SCHEDULE_DELAY", "99999999999999999999"), ("OTEL_BSP_SCHEDULE_DELAY", "0"), ("OTEL_BSP_MAX_QUEUE_SIZE", "-1"),
            ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "5000"), ("OTEL_EXPORTER_OTLP_TIMEOUT", "1e9"), ("OTEL_TRACES_SAMPLER", "jaeger_remote"),
            ("OTEL_TRACES_SAMPLER_ARG", "nan"), ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"), ("OTEL_EXPORTER_OTLP_HEADERS", "novalue"),
            ("OTEL_RESOURCE_ATTRIBUTES", "a=%0A"),
        ] {
            var environment = [variable: value]
            if variable == "OTEL_TRACES_SAMPLER_ARG" { environment["OTEL_TRACES_SAMPLER"] = "traceidratio" }
            do {
                _ = try TraceSettings(otlpEndpoint: "http://collector:4318", environment: environment)
                Issue.record("\(variable)=\(value) was taken")
            } catch {
                #expect(error.variable == variable, "\(variable)=\(value): \(error)")
            }
        }
    }

    @Test func aTraceparentIsReadAsW3CWritesItAndNothingElse() throws {
        let context = try #require(SpanContext(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", traceState: "congo=t61rcWkgMzE"))
        #expect(context.traceID.hex == "4bf92f3577b34da6a3ce929d0e0e4736" && context.spanID == 0x00f0_67aa_0ba9_02b7 && context.sampled)
        #expect(context.traceparent == "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
        for bad in [
            "", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-zz",
        ] {
            #expect(SpanContext(traceparent: bad) == nil, "\(bad)")
        }
        // A later version is read as version 00, its extra fields ignored.
        #expect(SpanContext(traceparent: "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-later")?.sampled == false)
    }

    /// A child span continues its parent's trace and sampling; a ratio decides by trace id, the
    /// same on every node.
    @Test func spansContinueTheirParentsTraceAndItsSamplingDecision() throws {
        let tracer = ExportingTracer(sampler: .parentBased(root: .alwaysOff), exporter: nil)
        var parent = ServiceContext.topLevel
        parent.spanContext = SpanContext(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
        let child = tracer.startSpan("child", context: parent)
        #expect(child.context.spanContext?.traceID.hex == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(child.context.spanContext?.sampled == true && child.context.spanContext?.spanID != 0x00f0_67aa_0ba9_02b7)
        #expect(tracer.startSpan("root", context: .topLevel).context.spanContext?.sampled == false)
        var carrier: [String: String] = [:]
        tracer.inject(child.context, into: &carrier, using: DictionaryInjector())
        #expect(carrier["traceparent"] == child.context.spanContext?.traceparent)
        let half = Sampler.traceIDRatio(0.5)
        let sampled = (0..<2000).filter { _ in
            var context = ServiceContext.topLevel
            context.spanContext = nil
            return ExportingTracer(sampler: half, exporter: nil).startSpan("r", context: context).context.spanContext!.sampled
        }.count
        #expect((800...1200).contains(sampled), "\(sampled) of 2000 at 0.5")
    }
}

private struct DictionaryInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) { carrier[key] = value }
}
