"""Hostile pages against the keyless loopback display, in a real headless Chromium.

Started by BrowserTests.swift with ISLET_URL and ISLET_ADMIN_KEY set, like display_test.py.

- `cross-site`: a page on another loopback port (another origin) tries what any web page the
  person opens could try: read the event stream over a WebSocket (no CORS there), dismiss an
  activity with a `no-cors` POST and with a form, read the snapshot, change settings.
- `rebinding`: the display reached under another name (Chromium maps evil.example to
  127.0.0.1, as DNS rebinding does): the page is same-origin with itself there, so the browser
  lets it read and write — the server must not.
- `xss`: hostile text in every field a producer controls is shown as text, and no script runs.

Each step prints "ok: …"; a failure prints why and exits 1.
"""

import http.server
import json
import os
import sys
import threading
import time
import urllib.parse

from display_test import URL, Display, Scenario, api, browser, start

PORT = urllib.parse.urlparse(URL).port


def serve_page(html):
    """Serves `html` at / from another loopback port: another origin. Returns its URL."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = html.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *arguments):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/"


def wait_for(what, check, timeout=8):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"never saw {what}")


def cross_site():
    key = api("POST", "/v1/apps", {"bundleId": "com.example.bank", "name": "Bank"})["apiKey"]
    secret = start(key, "TransferAttributes", {"account": "FR76 0000"}, {"amount": 1200},
                   extra={"pushType": "token"})
    target = f"http://127.0.0.1:{PORT}"
    page = serve_page(f"""<!doctype html><body>
<form id="form" method="POST" action="{target}/v1/activities/{secret}/dismiss" enctype="text/plain" target="sink">
  <input name='{{"x":"' value='"}}'></form>
<iframe name="sink"></iframe>
<script>
  window.results = {{ws: [], wsClose: null, wsOpen: false}};
  const ws = new WebSocket("ws://127.0.0.1:{PORT}/v1/events/ws?device=default&since=0");
  ws.onopen = () => {{ results.wsOpen = true; }};
  ws.onmessage = (event) => {{ results.ws.push(event.data); }};
  ws.onclose = (event) => {{ results.wsClose = event.code; }};
  fetch("{target}/v1/activities/{secret}/dismiss", {{method: "POST", mode: "no-cors", body: "{{}}",
        headers: {{"Content-Type": "text/plain"}}}}).then(() => {{ results.noCors = "sent"; }}, (e) => {{ results.noCors = String(e); }});
  fetch("{target}/v1/devices/default/display").then((r) => r.text()).then(
        (text) => {{ results.snapshot = text; }}, (e) => {{ results.snapshot = "blocked: " + e; }});
  fetch("{target}/v1/devices/default/settings", {{method: "PUT", body: JSON.stringify({{bundleId: "com.example.bank", activitiesEnabled: false}}),
        headers: {{"Content-Type": "application/json"}}}}).then(() => {{ results.settings = "sent"; }}, (e) => {{ results.settings = "blocked: " + e; }});
  document.getElementById("form").submit();
  results.formSent = true;
</script></body>""")
    with Scenario() as run:
        driver = run.driver
        run.at("the hostile page")
        driver.get(page)
        results = wait_for("every attempt settle", lambda: (lambda r: r if r and r.get("wsClose") is not None
                           and "noCors" in r and "snapshot" in r and "settings" in r else None)(
                               driver.execute_script("return window.results")))
        assert not any(secret in message or "FR76" in message for message in results["ws"]), results
        assert results["wsClose"] == 4403, results
        assert not results["snapshot"].startswith("{\"activities\""), results
        print(f"ok: another origin's WebSocket is closed with 4403 and reads nothing; its snapshot read is refused ({results['snapshot'][:40]}…)")

        run.at("nothing changed")
        time.sleep(1)  # the form's and no-cors requests are fire-and-forget: give them time to land
        activity = api("GET", f"/v1/activities/{secret}", key=key)
        assert activity["activityState"] == "active", activity
        settings = api("GET", "/v1/devices/default/settings?bundleId=com.example.bank")["settings"]
        assert settings[0]["activitiesEnabled"] is True, settings
        print("ok: a no-cors POST, a text/plain form and a cross-origin PUT change nothing")

        run.at("the display itself still works")
        driver.get(URL + "/")
        display = Display(driver)
        display.until("the activity", lambda: display.ids() == [secret])
        print("ok: the display on its own origin still works without a key")


def rebinding():
    key = api("POST", "/v1/apps", {"bundleId": "com.example.bank", "name": "Bank"})["apiKey"]
    secret = start(key, "TransferAttributes", {"account": "FR76 0000"}, {"amount": 1200})
    with Scenario() as run:
        run.driver.quit()
        run.driver = browser(["--host-resolver-rules=MAP evil.example 127.0.0.1"])
        driver = run.driver
        run.at("the display under another name")
        driver.get(f"http://evil.example:{PORT}/")
        wait_for("the refusal", lambda: driver.execute_script("return document.getElementById('phone').dataset.error") == "403")
        print("ok: reached as evil.example, the display's snapshot is refused (403)")

        run.at("same-origin writes under another name")
        result = driver.execute_async_script("""
            const done = arguments[arguments.length - 1];
            Promise.all([
              fetch('/v1/devices/default/settings', {method: 'PUT', headers: {'Content-Type': 'application/json'},
                    body: JSON.stringify({bundleId: 'com.example.bank', activitiesEnabled: false})}).then((r) => r.status),
              fetch('/v1/activities/' + arguments[0] + '/dismiss', {method: 'POST', headers: {'Content-Type': 'application/json'},
                    body: '{}'}).then((r) => r.status),
              fetch('/v1/devices/default/settings').then((r) => r.status),
            ]).then(done, (e) => done(String(e)));""", secret)
        assert result == [403, 403, 403], result
        assert api("GET", f"/v1/activities/{secret}", key=key)["activityState"] == "active"
        print("ok: settings, dismissal and settings read under another Host are refused (403, 403, 403)")


XSS = [
    "<script>window.__pwned='script'</script>",
    "<img src=x onerror=\"window.__pwned='img'\">",
    "\"><svg onload=\"window.__pwned='svg'\">",
    "javascript:window.__pwned='js-url'",
    "<iframe srcdoc=\"<script>parent.__pwned='srcdoc'</script>\"></iframe>",
    "</time><script>window.__pwned='time'</script>",
    "'-(window.__pwned='quote')-'",
    "{{constructor.constructor(\"window.__pwned='template'\")()}}",
    "<style>body{display:none}</style>",
    "<a href=\"javascript:window.__pwned='href'\" id=xsslink>x</a>",
    "<details open ontoggle=\"window.__pwned='toggle'\">",
]


def xss():
    name = XSS[1]
    key = api("POST", "/v1/apps", {"bundleId": "com.example.xss", "name": name})["apiKey"]
    layout = {"lockScreen": {"type": "VStack", "children": [
        {"type": "Text", "text": XSS[0]},
        {"type": "Text", "text": {"bind": "state.a"}},
        {"type": "Text", "text": {"bind": "attributes.b"}},
        {"type": "Image", "systemName": {"bind": "state.icon"}},
        {"type": "Text", "text": {"bind": "state.when", "format": {"date": {"style": "time"}}}},
        {"type": "Text", "date": {"bind": "state.when"}, "style": "relative"},
        {"type": "Text", "timerInterval": {"start": {"bind": "state.when"}, "end": {"bind": "state.when"}}},
        {"type": "ProgressView", "timerInterval": {"start": 0, "end": {"bind": "state.when"}}},
        {"type": "Text", "text": {"bind": "state.when", "format": "duration"}},
    ]}, "dynamicIsland": {
        "expanded": {"center": {"type": "Text", "text": {"bind": "attributes.b"}}, "bottom": {"type": "Text", "text": {"bind": "state.c"}}},
        "compactLeading": {"type": "Text", "text": {"bind": "state.a"}},
        "compactTrailing": {"type": "Text", "text": XSS[9]},
        "minimal": {"type": "Text", "text": {"bind": "state.c"}}}}
    api("PUT", "/v1/apps/com.example.xss/layouts/Payloads", layout, key=key)
    ids = []
    for index, payload in enumerate(XSS):
        state = {"a": payload, "c": XSS[(index + 3) % len(XSS)], "icon": payload, "when": payload}
        body = {"attributesType": "Payloads" if index % 2 == 0 else payload[:200], "attributes": {"b": payload},
                "content": {"state": state, "relevanceScore": index},
                "alert": {"title": payload, "body": XSS[(index + 5) % len(XSS)]}}
        ids.append(api("POST", "/v1/activities", body, key=key)["id"])
        if len(ids) == 5:
            break
    with Scenario() as run:
        driver = run.driver
        page = Display(driver)
        run.at("the display with every payload")
        # Every place drawn (docs/surfaces.md): the payloads reach the watch, CarPlay, the Mac,
        # the iPad and StandBy too.
        driver.get(URL + "/?surfaces=all")
        page.until("the cards", lambda: len(page.ids()) == len(ids))
        for index, payload in enumerate(XSS[5:]):
            api("POST", f"/v1/activities/{ids[index % len(ids)]}/update",
                {"content": {"state": {"a": payload, "c": payload, "icon": payload, "when": 1e300}},
                 "alert": {"title": payload, "body": payload}}, key=key)
        time.sleep(1.5)
        for item in driver.find_elements("css selector", "#list .islet-card, #surface-ipad .islet-card, #surface-mac .islet-menubar-item"):
            item.click()
        time.sleep(0.5)
        pwned = driver.execute_script("return window.__pwned === undefined ? null : String(window.__pwned)")
        assert pwned is None, f"a payload ran: {pwned}"
        injected = driver.execute_script("""
            return Array.from(document.querySelectorAll('#list script, #list iframe, #list img, #list style, #list details, #list a[href^="javascript"], #island script, #banner script, #surfaces script, #surfaces iframe, #surfaces img, #surfaces style, #surfaces details, #surfaces a[href^="javascript"]'))
              .map((node) => node.outerHTML);""")
        assert injected == [], injected
        text = driver.execute_script("return document.body.innerText")
        assert "<script>window.__pwned='script'</script>" in text or "</time><script>" in text, text[:500]
        print(f"ok: {len(XSS)} hostile payloads in names, types, attributes, states, icons, dates and alerts show as text; none runs")


if __name__ == "__main__":
    {"cross-site": cross_site, "rebinding": rebinding, "xss": xss}[sys.argv[1]]()
