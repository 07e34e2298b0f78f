"""The console's Webhooks page (issue 43): each endpoint, where it stands, and its attempts.

Started by ConsoleWebhooksBrowserTests.swift with ISLET_URL and ISLET_ADMIN_KEY set, on a
loopback server whose console needs no key. A receiver on loopback answers 200 at /ok and 500 at
/fail (with a body); an app has an endpoint at each. Prints one "ok:" line per step; with
SHOTS (or ISLET_SCREENSHOTS) set to a directory, saves the page at 1280 and 390 points wide,
light and dark, there.
"""

import http.server
import os
import threading

from display_test import URL, Scenario, api, browser, fits_a_phone, screenshots, text  # noqa: F401 (browser: used by Scenario)

SHOTS = os.environ.get("SHOTS") or os.environ.get("ISLET_SCREENSHOTS")


class Receiver(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        failing = self.path == "/fail"
        body = b'{"error": "the receiver is down on purpose"}' if failing else b"ok"
        self.send_response(500 if failing else 200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *arguments):
        pass


def main():
    receiver = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{receiver.server_address[1]}"
    key = api("POST", "/v1/apps", {"bundleId": "com.example.rides", "name": "Rides"})["apiKey"]
    good = api("POST", "/v1/apps/com.example.rides/webhooks", {"url": base + "/ok", "description": "backend"}, key=key)["id"]
    bad = api("POST", "/v1/apps/com.example.rides/webhooks", {"url": base + "/fail", "events": ["activity.*"]}, key=key)["id"]
    ride = api("POST", "/v1/activities", {"attributesType": "RideAttributes", "attributes": {"route": "Loop"},
                                           "content": {"state": {"eta": 9}}}, key=key)["id"]
    api("POST", f"/v1/activities/{ride}/update", {"content": {"state": {"eta": 7}}}, key=key)

    with Scenario() as scenario:
        page, driver = scenario.page, scenario.driver
        driver.set_window_size(1280, 1000)

        scenario.at("each endpoint and where it stands")
        driver.get(URL + "/console/webhooks")
        page.until("two endpoints", lambda: page.js("return document.querySelectorAll('#webhooks [data-endpoint]').length") == 2)
        good_panel = f'[data-endpoint="{good}"]'
        bad_panel = f'[data-endpoint="{bad}"]'
        page.until("the good one sending, its requests answered 200",
                   lambda: page.js(f"return document.querySelectorAll('{good_panel} tr[data-status=\"200\"]').length") >= 2)
        assert page.js(f"return document.querySelector('{good_panel}').dataset.state") == "sending"
        assert base + "/ok" in text(page, good_panel) and "backend" in text(page, good_panel)
        page.until("the bad one failing, holding at the start", lambda: page.js(f"return document.querySelector('{bad_panel}').dataset.state") == "failing")
        shown = text(page, bad_panel)
        assert "Holding at evt_" in shown and "events: activity.*" in shown, shown
        assert page.js(f"return document.querySelectorAll('{bad_panel} tr[data-status=\"500\"]').length") >= 1
        page.js(f"document.querySelector('{bad_panel} tr[data-status=\"500\"] details').open = true")
        assert "the receiver is down on purpose" in text(page, f'{bad_panel} tr[data-status="500"]')
        print("ok: the page lists both endpoints: one sending with its 200s, one failing, holding at its event, with the answer's first bytes")
        screenshots(driver, SHOTS, "webhooks")

        scenario.at("a test event from the page")
        before = page.js(f"return document.querySelectorAll('{good_panel} tr[data-attempt]').length")
        page.js(f"document.querySelector('{good_panel} button[data-action=\"test\"]').click()")
        page.until("the toast", lambda: "Test event: answered 200" in (page.js("return document.body.innerText") or ""))
        page.until("the test's row", lambda: "webhook.test" in (text(page, f"{good_panel} tbody") or ""))
        assert page.js(f"return document.querySelectorAll('{good_panel} tr[data-attempt]').length") > before
        print("ok: Send a test sends one from the keyless console and its attempt shows at the top")

        scenario.at("a phone's width")
        fits_a_phone(page, driver)
    receiver.shutdown()


if __name__ == "__main__":
    main()
