"""The display as an Android 16 phone, driven by Google's own FCM client: firebase-admin (PyPI),
given the service account Islet issued and pointed at Islet's push port, sends the messages an
Android backend sends; headless Chromium shows them on the phone.

Started by BrowserTests.swift with ISLET_URL, ISLET_ADMIN_KEY, ISLET_PUSH_URL (Islet's push
port) and ISLET_CA (the authority its TLS certificate comes from). Prints one "ok:" line per
step; with SHOTS (or ISLET_SCREENSHOTS) set to a directory, saves the phone light and dark there.
"""

import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from display_test import Scenario, api  # noqa: E402

import firebase_admin  # noqa: E402
from firebase_admin import credentials, exceptions, messaging  # noqa: E402

URL = os.environ["ISLET_URL"]
PUSH = os.environ["ISLET_PUSH_URL"]
SHOTS = os.environ.get("SHOTS") or os.environ.get("ISLET_SCREENSHOTS")
BUNDLE = "com.example.ride"
PROJECT = "islet-ride-demo"

# firebase-admin unchanged but for two things every provider tested here changes: the address of
# FCM (a constant of the library) and the authority it trusts (requests reads REQUESTS_CA_BUNDLE).
os.environ["REQUESTS_CA_BUNDLE"] = os.environ["ISLET_CA"]
messaging._MessagingService.FCM_URL = PUSH + "/v1/projects/{0}/messages:send"


def islet(event, tag, state, notification, timestamp, **extra):
    body = {"event": event, "activityId": tag, "bundleId": BUNDLE, "attributesType": "RideAttributes",
            "attributes": {"destination": "Gare du Nord"}, "contentState": state, "timestamp": timestamp,
            "notification": notification}
    body.update(extra)
    return json.dumps(body)


def send(token, data, fid=None):
    """To the phone's registration token, or to its installation ID when `fid` is given."""
    target = {"fid": fid} if fid else {"token": token}
    return messaging.send(messaging.Message(data={"islet": data}, **target,
                                            android=messaging.AndroidConfig(priority="high", collapse_key="ride")))


def ride(value, eta, text="Your driver is on the way", title="Ride to Gare du Nord"):
    return {"title": title, "text": text, "subText": "Ana · Toyota Prius", "shortCriticalText": eta,
            "progress": {"value": value, "max": 100,
                         "segments": [{"length": 30, "color": "#34C759"}, {"length": 70, "color": "#0B57D0"}],
                         "points": [{"position": 30, "color": "#FF9500"}, {"position": 100}]}}


def cards(page):
    return page.js("""
        return Array.from(document.querySelectorAll('#android .a-card')).map(card => ({
          id: card.dataset.id, promoted: card.dataset.promoted === 'true', text: card.innerText,
          segments: card.querySelectorAll('.a-segment').length, points: card.querySelectorAll('.a-point').length,
          fills: Array.from(card.querySelectorAll('.a-fill')).map(fill => fill.style.width),
          tracker: (card.querySelector('.a-tracker') || {style: {}}).style.left,
          why: (card.querySelector('.a-why') || {}).innerText || null}));""")


def chip(page):
    return page.js("const chip = document.querySelector('#android .a-chip'); return chip ? chip.innerText : null;")


def main():
    api("POST", "/v1/apps", {"bundleId": BUNDLE, "name": "Ride"})
    api("POST", "/v1/devices", {"id": "pixel", "name": "Pixel 9", "platform": "android"})
    account = api("POST", "/v1/fcm/service-accounts", {"projectId": PROJECT})
    path = os.path.join(tempfile.mkdtemp(), "service-account.json")
    with open(path, "w") as file:
        json.dump(account, file)
    firebase_admin.initialize_app(credentials.Certificate(path))
    token = [s for s in api("GET", "/v1/devices/pixel/settings")["settings"] if s["bundleId"] == BUNDLE][0]["fcmToken"]
    now = int(time.time())

    with Scenario() as scenario:
        page = scenario.page
        scenario.driver.get(URL + "/devices/pixel")
        page.until("the Android phone", lambda: page.js("return document.getElementById('phone').classList.contains('islet-android')"))

        scenario.at("start")
        name = send(token, islet("start", "ride-1", {"eta": 12}, ride(30, "12 min"), now))
        assert name.startswith(f"projects/{PROJECT}/messages/"), name
        shown = page.until("the Live Update", lambda: [c for c in cards(page) if "Ride to Gare du Nord" in c["text"]])
        card = shown[0]
        assert card["promoted"] and card["segments"] == 2 and card["points"] == 2, card
        assert "Ana · Toyota Prius" in card["text"] and "Your driver is on the way" in card["text"], card
        assert card["fills"] == ["100%", "0%"] and card["tracker"] == "30%", card
        page.until("the chip's text", lambda: chip(page) and "12 min" in chip(page))
        print("ok: firebase-admin's start is a promoted Live Update with ProgressStyle and the status bar's chip")

        scenario.at("update")
        send(token, islet("update", "ride-1", {"eta": 4}, ride(65, "4 min", text="Arriving soon"), now + 1))
        card = page.until("the update", lambda: [c for c in cards(page) if "Arriving soon" in c["text"]])[0]
        assert card["tracker"] == "65%" and card["fills"][0] == "100%" and card["fills"][1].startswith("50"), card
        page.until("the chip's new text", lambda: chip(page) and "4 min" in chip(page))
        print("ok: an update moves the tracker and the fill, and the chip")

        scenario.at("not promoted")
        send(token, islet("start", "ride-2", {"eta": 30}, ride(0, "30 min", title=""), now + 2))
        card = page.until("the second notification", lambda: [c for c in cards(page) if not c["promoted"]])[0]
        assert "content title" in card["why"], card
        print("ok: a notification without a title is shown, and why it is not a Live Update")

        if SHOTS:
            for scheme in ("light", "dark"):
                scenario.driver.get(URL + "/devices/pixel?appearance=" + scheme)
                page.until("the phone", lambda: len(cards(page)) == 2)
                time.sleep(0.5)
                scenario.driver.save_screenshot(os.path.join(SHOTS, f"android-live-update-{scheme}.png"))

        scenario.at("older and unknown")
        send(token, islet("update", "ride-1", {"eta": 9}, ride(10, "9 min", text="Old news"), now - 100))
        try:
            send("nope:APA91bUnknown", islet("update", "ride-1", {}, ride(1, "1"), now + 3))
            raise AssertionError("an unknown token was accepted")
        except messaging.UnregisteredError:
            pass
        time.sleep(0.5)
        assert not [c for c in cards(page) if "Old news" in c["text"]], cards(page)
        print("ok: an older message is dropped as the phone drops it, and an unknown token is UNREGISTERED")

        scenario.at("end")
        send(token, islet("end", "ride-1", {"eta": 0}, ride(100, "Here", text="Arrived"), now + 4))
        card = page.until("the end", lambda: [c for c in cards(page) if "Arrived" in c["text"]])[0]
        assert not card["promoted"] and "ended" in card["why"], card
        print("ok: an end leaves the Live Updates and stays as an ordinary notification")

        scenario.at("dismiss")
        scenario.driver.execute_script("document.querySelector('#android .a-card[data-id=\"%s\"] .a-dismiss').click()" % card["id"])
        page.until("the dismissal", lambda: not [c for c in cards(page) if c["id"] == card["id"]])
        print("ok: dismissing it takes it away")

        scenario.at("installation id")
        settings = lambda: [s for s in api("GET", "/v1/devices/pixel/settings")["settings"] if s["bundleId"] == BUNDLE][0]
        assert "fcmInstallationId" not in settings(), settings()
        scenario.driver.execute_script("document.querySelector('#apps input[name=fcmInstallationIdEnabled]').click()")
        fid = page.until("the installation ID", lambda: settings().get("fcmInstallationId"))
        send(None, islet("start", "ride-3", {"eta": 20}, ride(5, "20 min", title="Ride by its ID"), now + 5), fid=fid)
        page.until("the ride sent to the ID", lambda: [c for c in cards(page) if "Ride by its ID" in c["text"]])
        print("ok: the panel switches the app to its installation ID, and firebase-admin reaches the phone by fid")


if __name__ == "__main__":
    main()
