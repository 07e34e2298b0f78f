#!/usr/bin/env python3
"""A backend's webhook handler, as small as one can be: verifies each request as Standard
Webhooks says (HMAC-SHA256 of "webhook-id.webhook-timestamp.body", keyed by the endpoint's
whsec_ secret, at most 5 minutes of clock skew) with Python's standard library only, prints
one line per event, and answers 200 — or 400 to a request it cannot verify.

    python3 Examples/webhooks/receiver.py 3000 --secret whsec_...
    python3 Examples/webhooks/receiver.py 3000 --secret-from listen.log   # the secret islet webhooks listen printed

The `standardwebhooks` package (pip) does the same check in one call, in about ten languages.
"""
import argparse, base64, hashlib, hmac, http.server, json, re, sys, time


def secret_bytes(args):
    text = args.secret
    if args.secret_from:
        with open(args.secret_from) as log:
            found = re.findall(r"whsec_[A-Za-z0-9+/=]+", log.read())
        text = found[-1] if found else None
    if not text:
        return None
    return base64.b64decode(text.removeprefix("whsec_"))


def verified(key, headers, body):
    message_id, stamp, signatures = headers.get("webhook-id"), headers.get("webhook-timestamp"), headers.get("webhook-signature", "")
    if not (key and message_id and stamp and stamp.isdigit()) or abs(time.time() - int(stamp)) > 300:
        return False
    expected = base64.b64encode(hmac.new(key, f"{message_id}.{stamp}.".encode() + body, hashlib.sha256).digest()).decode()
    return any(hmac.compare_digest(item.removeprefix("v1,"), expected) for item in signatures.split(" ") if item.startswith("v1,"))


def main():
    parser = argparse.ArgumentParser(description="A webhook receiver that verifies Islet's signatures.")
    parser.add_argument("port", type=int)
    parser.add_argument("--secret", help="the endpoint's whsec_ secret")
    parser.add_argument("--secret-from", help="a file whose last whsec_ secret is the one (read at each request)")
    args = parser.parse_args()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            ok = verified(secret_bytes(args), self.headers, body)
            if ok:
                event = json.loads(body)
                activity = event.get("data", {}).get("activity") or {}
                state = json.dumps(activity.get("content", {}).get("state", {}), separators=(",", ":"))
                print(f"receiver: verified {event['type']:<18} {event['id']}  {activity.get('id', '')[:8]}  {state}", flush=True)
            else:
                print(f"receiver: refused {self.headers.get('webhook-id')}: its signature does not verify", flush=True)
            reply = b"ok" if ok else b"bad signature"
            self.send_response(200 if ok else 400)
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(f"receiver: listening on http://127.0.0.1:{args.port}/hook", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
