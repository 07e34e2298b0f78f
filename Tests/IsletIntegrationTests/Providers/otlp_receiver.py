#!/usr/bin/env python3
"""A small OTLP/HTTP receiver for TracingTests (docs/operations.md §1).

Takes POST /v1/traces (application/x-protobuf), decodes each ExportTraceServiceRequest with the
`opentelemetry-proto` package, and appends every span as one JSON line to OUT: its trace and
span ids, its parent, name, kind, status, attributes, and its resource's `service.name` and
`service.instance.id`. Prints "listening on PORT" once it listens on a free loopback port.

  otlp_receiver.py OUT.jsonl
"""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest, ExportTraceServiceResponse

out = sys.argv[1]


def value(any_value):
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path != "/v1/traces" or self.headers.get("Content-Type") != "application/x-protobuf":
            self.send_response(404 if self.path != "/v1/traces" else 415)
            self.end_headers()
            return
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        lines = []
        for resource_spans in request.resource_spans:
            resource = {a.key: value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    lines.append(json.dumps({
                        "traceId": span.trace_id.hex(), "spanId": span.span_id.hex(), "parentSpanId": span.parent_span_id.hex(),
                        "name": span.name, "kind": span.kind, "status": span.status.code,
                        "attributes": {a.key: value(a.value) for a in span.attributes},
                        "service": resource.get("service.name"), "instance": resource.get("service.instance.id"),
                    }))
        with open(out, "a") as file:
            file.write("".join(line + "\n" for line in lines))
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
print(f"listening on {server.server_address[1]}", flush=True)
server.serve_forever()
