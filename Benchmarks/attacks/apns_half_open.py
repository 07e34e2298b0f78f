#!/usr/bin/env python3
"""Half-open HTTP/2 streams and silent connections against Islet's APNs port (issue 13,
finding 5). Needs `pip install h2`.

Opens C connections with S streams each: HEADERS of a push with an invalid provider token and
no END_STREAM, so the server answers 403 from the headers alone. Counts the 403s and the
RST_STREAMs that follow, and prints the server's resident memory (from /proc) before, while
the connections stay open, and after. Then opens one TLS connection that negotiates h2 and
sends nothing, and times how long the server keeps it.

    python3 Benchmarks/attacks/apns_half_open.py --port 2197 --ca .islet/tls/ca.pem --pid $(pgrep -n islet)
"""
import argparse
import socket
import ssl
import time

import h2.config
import h2.connection
import h2.events


def rss(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    return -1


def connect(port, ca):
    context = ssl.create_default_context(cafile=ca)
    context.set_alpn_protocols(["h2"])
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    return context.wrap_socket(raw, server_hostname="localhost")


def drain(connections, seconds, counts):
    deadline = time.monotonic() + seconds
    for tls, h2connection in connections:
        tls.settimeout(0.05)
    while time.monotonic() < deadline:
        for tls, h2connection in connections:
            try:
                data = tls.recv(65536)
            except (socket.timeout, ssl.SSLWantReadError):
                continue
            except OSError:
                data = b""
            if not data:
                counts["closed"] += 1
                continue
            for event in h2connection.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived):
                    status = "status " + dict(event.headers).get(b":status", b"?").decode()
                    counts[status] = counts.get(status, 0) + 1
                    counts["responses"] += 1
                elif isinstance(event, h2.events.StreamReset):
                    counts["resets"] += 1
            outbound = h2connection.data_to_send()
            if outbound:
                tls.sendall(outbound)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=2197)
    parser.add_argument("--ca", required=True)
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--connections", type=int, default=20)
    parser.add_argument("--streams", type=int, default=100)
    arguments = parser.parse_args()
    print(f"server RSS before: {rss(arguments.pid)} MB", flush=True)
    connections = []
    headers = [
        (":method", "POST"), (":scheme", "https"), (":path", "/3/device/" + "ab" * 32), (":authority", "localhost"),
        ("authorization", "bearer not-a-token"), ("apns-topic", "com.example.app.push-type.liveactivity"),
        ("apns-push-type", "liveactivity"),
    ]
    for _ in range(arguments.connections):
        tls = connect(arguments.port, arguments.ca)
        h2connection = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        h2connection.initiate_connection()
        for index in range(arguments.streams):
            h2connection.send_headers(2 * index + 1, headers, end_stream=False)
        tls.sendall(h2connection.data_to_send())
        connections.append((tls, h2connection))
    counts = {"responses": 0, "resets": 0, "closed": 0}
    drain(connections, 5, counts)
    print(f"{arguments.connections} connections x {arguments.streams} half-open streams: "
          f"{counts['responses']} answers, {counts['resets']} RST_STREAM ({counts})", flush=True)
    print(f"server RSS with them open: {rss(arguments.pid)} MB", flush=True)
    time.sleep(10)
    print(f"server RSS 10 s later:    {rss(arguments.pid)} MB", flush=True)
    for tls, _ in connections:
        tls.close()
    time.sleep(2)
    print(f"server RSS after closing:  {rss(arguments.pid)} MB", flush=True)

    silent = connect(arguments.port, arguments.ca)
    print(f"silent h2 connection: ALPN {silent.selected_alpn_protocol()}", flush=True)
    started = time.monotonic()
    silent.settimeout(60)
    try:
        while silent.recv(65536):
            pass
        print(f"silent h2 connection closed by the server after {time.monotonic() - started:.1f}s")
    except socket.timeout:
        print("silent h2 connection still open after 60s")


if __name__ == "__main__":
    main()
