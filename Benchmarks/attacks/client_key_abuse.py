#!/usr/bin/env python3
"""A hostile holder of a client key (issue 59): what it can make a running Islet hold and spend.

Against `islet serve` on loopback with its admin key, it makes an app and a client key, then:

1. registers installations from one address until refused (the per-address limit);
2. registers from a new address each time (as through a reverse proxy on this machine, whose
   X-Forwarded-For Islet believes) until refused (the per-client-key limit), timing them and
   weighing the data directory before and after;
3. with one installation's credential: push-to-start tokens of new types until refused, one
   type's token replaced over and over (does what is kept grow?), a body past 4 KB;
4. sends refused registrations for a few seconds beside as many `GET /healthz` on one
   kept-alive connection each, and prints the two rates.

    python3 Benchmarks/attacks/client_key_abuse.py --port 8080 --key "$(cat .islet/admin.key)" --data .islet
"""
import argparse
import http.client
import json
import os
import time

APP = "com.example.abused"


class Connection:
    def __init__(self, port):
        self.port = port
        self.http = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def send(self, method, path, body=None, key=None, headers=None):
        head = {"Content-Type": "application/json"}
        if key:
            head["Authorization"] = "Bearer " + key
        head.update(headers or {})
        data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
        for attempt in range(2):
            try:
                self.http.request(method, path, body=data, headers=head)
                answer = self.http.getresponse()
                text = answer.read()
                return answer.status, (json.loads(text) if text.startswith(b"{") else text)
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self.http.close()
                self.http = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        raise RuntimeError("no answer")


def size(directory):
    return sum(os.path.getsize(os.path.join(root, name)) for root, _, names in os.walk(directory) for name in names)


def register(connection, client_key, address=None):
    headers = {"X-Forwarded-For": address} if address else {}
    return connection.send("POST", "/v1/installations", {"bundleId": APP, "platform": "ios"}, key=client_key, headers=headers)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--key", required=True, help="the admin key")
    parser.add_argument("--data", help="the server's data directory, to weigh")
    parser.add_argument("--seconds", type=float, default=5)
    options = parser.parse_args()
    c = Connection(options.port)

    status, app = c.send("POST", "/v1/apps", {"bundleId": APP, "name": "Abused"}, key=options.key)
    assert status == 201, (status, app)
    status, made = c.send("POST", f"/v1/apps/{APP}/client-keys", {"name": "leaked"}, key=app["apiKey"])
    client_key = made["key"]

    # 1. One address.
    taken, answer = 0, None
    while True:
        status, answer = register(c, client_key, "198.51.100.1")
        if status != 201:
            break
        taken += 1
    print(f"1. one address: {taken} installations, then {status} {answer['error']['reason']}: {answer['error']['message']}")

    # 2. A new address each time, until the client key's hour is spent.
    before = size(options.data) if options.data else None
    started, n, first = time.monotonic(), 0, None
    while True:
        n += 1
        status, answer = register(c, client_key, f"10.{n // 65536 % 256}.{n // 256 % 256}.{n % 256}")
        if status != 201:
            break
        first = first or answer
        taken += 1
    took = time.monotonic() - started
    c.send("POST", "/v1/operations/checkpoint", key=options.key)  # if there is none, the WAL is weighed as it is
    after = size(options.data) if options.data else None
    grown = f"; the data directory grew {(after - before) / 1e6:.1f} MB, {(after - before) / max(n - 1, 1):.0f} bytes an installation" if before else ""
    print(f"2. new addresses: {taken} installations in all ({n - 1} in {took:.1f} s, {(n - 1) / took:.0f}/s), then {status} "
          f"{answer['error']['reason']}: {answer['error']['message']}{grown}")

    # 3. One installation's credential.
    credential, device = first["credential"], first["installation"]["id"]
    types = 0
    while True:
        status, answer = c.send("PUT", f"/v1/devices/{device}/push-to-start-tokens/Type{types}",
                                {"token": f"{types:064x}", "environment": "production"}, key=credential)
        if status != 200:
            break
        types += 1
    print(f"3a. push-to-start tokens of {types} types, then {status} {answer['error']['reason']}")
    for n in range(1000):
        status, _ = c.send("PUT", f"/v1/devices/{device}/push-to-start-tokens/Type0",
                           {"token": f"{n + 1000:064x}", "environment": "production"}, key=credential)
        assert status == 200, status
    status, itself = c.send("GET", "/v1/installations/self", key=credential)
    kept = len(itself["tokens"])
    print(f"3b. one type's token replaced 1,000 times: the installation keeps {kept} tokens "
          f"({sum(1 for t in itself['tokens'] if t.get('retiredAt') is None)} current)")
    status, answer = c.send("PUT", f"/v1/devices/{device}/push-to-start-tokens/Type0",
                            (json.dumps({"token": "ab" * 32, "environment": "production"}) + " " * 5000).encode(), key=credential)
    print(f"3c. a 5 KB body: {status} {answer['error']['reason'] if isinstance(answer, dict) else answer[:80]}")

    # 4. Refused registrations beside GET /healthz, each on its own kept-alive connection.
    def rate(work):
        started, count = time.monotonic(), 0
        while time.monotonic() - started < options.seconds:
            work()
            count += 1
        return count / (time.monotonic() - started)
    refused = Connection(options.port)
    health = Connection(options.port)
    r = rate(lambda: register(refused, client_key, "10.200.0.1"))
    h = rate(lambda: health.send("GET", "/healthz"))
    print(f"4. refused registrations {r:.0f}/s, GET /healthz {h:.0f}/s, one after the other on one connection each: {r / h:.2f}×")


if __name__ == "__main__":
    main()
