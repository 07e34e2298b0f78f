"""The console's Sends page (issue 44): each send, how far it has got, and the phones it could
not reach; a scheduled one cancelled from the page.

Started by ConsoleSendsBrowserTests.swift with ISLET_URL and ISLET_ADMIN_KEY set, on a loopback
server whose console needs no key. Three fans' phones, Live Activities turned off on the third;
a start by tag, run at once, and the same start scheduled an hour ahead with its end. Prints one
"ok:" line per step; with SHOTS (or ISLET_SCREENSHOTS) set to a directory, saves the page at 1280
and 390 points wide, light and dark, there.
"""

import os
import time

from display_test import URL, Scenario, api, browser, fits_a_phone, screenshots, text  # noqa: F401 (browser: used by Scenario)

SHOTS = os.environ.get("SHOTS") or os.environ.get("ISLET_SCREENSHOTS")
APP = "com.example.match"


def main():
    key = api("POST", "/v1/apps", {"bundleId": APP, "name": "Match"})["apiKey"]
    for phone in ["fan-1", "fan-2", "fan-3"]:
        api("POST", "/v1/devices", {"id": phone})
    api("PUT", "/v1/devices/fan-3/settings", {"bundleId": APP, "activitiesEnabled": False})
    for user, phones in [("u-1", ["fan-1", "fan-2"]), ("u-2", ["fan-2", "fan-3"])]:
        api("PUT", f"/v1/apps/{APP}/users/{user}", {"devices": phones, "tags": {"match": "123"}}, key=key)
    start = {"action": "start", "key": "match-123", "audience": {"tags": {"match": "123"}}, "attributesType": "MatchAttributes",
             "attributes": {"home": "Ajax"}, "content": {"state": {"score": "0-0"}}}
    now = api("POST", f"/v1/apps/{APP}/sends", start, key=key)["id"]
    later = api("POST", f"/v1/apps/{APP}/sends", {**start, "key": "match-124", "at": int(time.time()) + 3600,
                                                  "endAt": int(time.time()) + 7200}, key=key)
    deadline = time.time() + 120
    while api("GET", f"/v1/apps/{APP}/sends/{now}", key=key)["status"] != "done":
        assert time.time() < deadline, "the send did not finish"
        time.sleep(0.2)

    with Scenario() as scenario:
        page, driver = scenario.page, scenario.driver
        driver.set_window_size(1280, 1000)

        scenario.at("each send and how far it has got")
        driver.get(URL + "/console/sends")
        page.until("three sends: the start, the scheduled one and its end",
                   lambda: page.js("return document.querySelectorAll('#sends [data-send]').length") == 3)
        done = f'[data-send="{now}"]'
        shown = text(page, done)
        assert page.js(f"return document.querySelector('{done}').dataset.status") == "done"
        assert "start match-123 on users with match=123" in shown and "3 phones: 2 started, 1 failed" in shown, shown
        assert page.js(f"return document.querySelector('{done} progress').value") == 3
        # Newest first: the scheduled start's end, then the start, then the one that ran.
        order = page.js("return [...document.querySelectorAll('#sends [data-send]')].map(n => n.dataset.send)")
        assert order[-1] == now and later["id"] in order, order
        print("ok: the page lists the sends newest first; the one that ran says 3 phones: 2 started, 1 failed")

        scenario.at("the phones it could not reach")
        page.js(f"document.querySelector('{done} details').open = true")
        page.until("the failed phone and why", lambda: "fan-3" in (text(page, f"{done} tbody") or ""))
        assert "denied" in text(page, f'{done} tr[data-device="fan-3"]').lower(), text(page, f"{done} tbody")
        print("ok: the phone it could not reach is listed with ActivityKit's reason")
        screenshots(driver, SHOTS, "sends")

        scenario.at("a scheduled send cancelled from the page")
        scheduled = f'[data-send="{later["id"]}"]'
        assert "scheduled" in text(page, scheduled) and "its end: " + later["followUp"] in text(page, scheduled)
        page.js(f"document.querySelector('{scheduled} button[data-action=\"cancel\"]').click()")
        page.until("the confirmation", lambda: page.js("return document.getElementById('confirm-dialog').open"))
        page.js("document.getElementById('confirm-ok').click()")
        page.until("cancelled", lambda: page.js(f"return document.querySelector('{scheduled}').dataset.status") == "cancelled")
        assert api("GET", f"/v1/apps/{APP}/sends/{later['followUp']}", key=key)["status"] == "cancelled"
        assert page.js(f"return document.querySelector('{scheduled} button[data-action=\"cancel\"]')") is None
        print("ok: Cancel, confirmed, cancels the scheduled start and its end from the keyless console")

        scenario.at("a phone's width")
        fits_a_phone(page, driver)


if __name__ == "__main__":
    main()
