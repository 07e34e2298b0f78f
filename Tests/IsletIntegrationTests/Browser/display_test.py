"""The web display in a real headless Chromium, driven by Selenium, against a running Islet.

Started by BrowserTests.swift with ISLET_URL and ISLET_ADMIN_KEY set. Each step changes
activities through the REST API, as a producer would, then waits (a few seconds at most) for the
page to show the result: text, order, the island's mode, the banner, the stale mark, removal.
Prints one line per step; on a failure, the page's state and a screenshot path, then exits 1.
"""

import json
import os
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

URL = os.environ["ISLET_URL"]
ADMIN = os.environ["ISLET_ADMIN_KEY"]
WAIT = 8


def api(method, path, body=None, key=ADMIN):
    request = urllib.request.Request(URL + path, method=method, data=None if body is None else json.dumps(body).encode())
    request.add_header("Authorization", "Bearer " + key)
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            text = response.read()
            return json.loads(text) if text else None
    except urllib.error.HTTPError as error:
        raise AssertionError(f"{method} {path} → {error.code}: {error.read().decode()}") from None


def browser(extra_arguments=()):
    options = Options()
    for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=900,1100", "--hide-scrollbars", *extra_arguments]:
        options.add_argument(argument)
    if os.environ.get("ISLET_CHROMIUM"):
        options.binary_location = os.environ["ISLET_CHROMIUM"]
    driver_path = os.environ.get("ISLET_CHROMEDRIVER", "/usr/bin/chromedriver")
    return webdriver.Chrome(service=Service(driver_path), options=options)


class Display:
    def __init__(self, driver):
        self.driver = driver

    def until(self, what, check):
        """Waits until check() returns something truthy, and returns it."""
        try:
            return WebDriverWait(self.driver, WAIT, poll_frequency=0.05).until(lambda _: check())
        except TimeoutException:
            raise AssertionError(f"the page never showed {what}") from None

    def js(self, script, *arguments):
        return self.driver.execute_script(script, *arguments)

    def items(self):
        """The Lock Screen's activities, top to bottom: (id, state, text, stale, truncated)."""
        return self.js("""
            return Array.from(document.querySelectorAll('#list .islet-item:not([data-leaving])')).map(item => {
              const card = item.querySelector('.islet-card');
              return {id: item.dataset.id, state: item.dataset.state, text: card.innerText,
                      stale: card.classList.contains('islet-stale'), truncated: card.classList.contains('islet-truncated'),
                      height: card.offsetHeight};
            });""")

    def ids(self):
        return [item["id"] for item in self.items()]

    def item(self, activity_id):
        return next((item for item in self.items() if item["id"] == activity_id), None)

    def island(self):
        return self.js("""
            const island = document.getElementById('island'), detached = document.getElementById('detached');
            return {mode: island.dataset.mode, activity: island.dataset.activity, text: island.innerText,
                    detached: detached.dataset.activity || '', detachedText: detached.innerText,
                    width: island.offsetWidth};""")

    def banner(self):
        return self.js("""
            const banner = document.getElementById('banner');
            return {shown: banner.dataset.shown === 'true', activity: banner.dataset.activity, text: banner.innerText};""")

    def state(self):
        return json.dumps({"items": self.items(), "island": self.island(), "banner": self.banner(),
                           "message": self.js("return document.getElementById('message').innerText")}, indent=1)


class Scenario:
    """A browser on the display for one scenario. On a failure it says at which step and why,
    with the page's state, its console and a screenshot, and the script exits 1."""

    def __init__(self, arguments=()):
        self.arguments = arguments

    def __enter__(self):
        self.driver = browser(self.arguments)
        self.page = Display(self.driver)
        self.step = "start"
        return self

    def at(self, step):
        self.step = step

    def __exit__(self, kind, error, trace):
        if kind is None:
            self.driver.quit()
            return False
        shot = os.path.join(tempfile.gettempdir(), f"islet-display-failure-{os.getpid()}.png")
        self.driver.save_screenshot(shot)
        print(f"FAILED at step '{self.step}': screenshot {shot}")
        traceback.print_exception(kind, error, trace, file=sys.stdout)
        try:
            print(self.page.state())
            for entry in self.driver.get_log("browser"):
                print("console:", entry)
        except Exception:
            pass
        self.driver.quit()
        sys.exit(1)


def text(page, selector):
    """What the first element `selector` matches says, as shown; None when there is none or it is hidden."""
    return page.js("const n = document.querySelector(arguments[0]); return n && !n.closest('[hidden]') ? n.innerText : null;", selector)


def fits_a_phone(page, driver):
    """At 390 points wide the page does not scroll sideways; says so with an "ok:" line."""
    driver.set_window_size(390, 900)
    wide = page.js("return document.documentElement.scrollWidth > window.innerWidth + 1")
    assert not wide, "the page scrolls sideways at 390 px"
    print("ok: at 390 px the page does not scroll sideways")


def screenshots(driver, directory, name):
    """The page at 1280 and 390 points wide, light and dark, the whole page tall, saved in
    directory as console-NAME-WIDTH-SCHEME.png; nothing without a directory."""
    if not directory:
        return
    for width in (1280, 390):
        for scheme in ("light", "dark"):
            driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": scheme}]})
            driver.set_window_size(width, 900)
            time.sleep(0.4)
            height = driver.execute_script("return document.documentElement.scrollHeight")
            # The window's size includes the browser's own bars: add them, or the page's foot is cut.
            bars = driver.execute_script("return window.outerHeight - window.innerHeight")
            driver.set_window_size(width, min(max(height, 700), 2600) + bars)
            time.sleep(0.3)
            driver.save_screenshot(os.path.join(directory, f"console-{name}-{width}-{scheme}.png"))
    driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "light"}]})
    driver.set_window_size(1280, 1000)


def start(key, type_name, attributes, state, relevance=0, extra=None):
    body = {"attributesType": type_name, "attributes": attributes, "content": {"state": state, "relevanceScore": relevance}}
    body.update(extra or {})
    return api("POST", "/v1/activities", body, key=key)["id"]


def main():
    bike_key = api("POST", "/v1/apps", {"bundleId": "com.example.bike", "name": "Bike Computer"})["apiKey"]
    ci_key = api("POST", "/v1/apps", {"bundleId": "com.example.ci", "name": "Builds"})["apiKey"]
    api("PUT", "/v1/apps/com.example.bike/layouts/RideAttributes", {
        "lockScreen": {"type": "HStack", "children": [
            {"type": "Image", "systemName": "bicycle"},
            {"type": "Text", "text": {"bind": "attributes.route"}},
            {"type": "Spacer"},
            {"type": "Text", "text": {"bind": "state.speed", "format": {"number": {"precision": 1, "unit": "km/h"}}},
             "modifiers": [{"contentTransition": "numericText"}]},
        ], "modifiers": [{"padding": 16}]},
        "dynamicIsland": {
            "expanded": {"leading": {"type": "Image", "systemName": "bicycle"},
                         "trailing": {"type": "Text", "text": {"bind": "state.speed", "format": {"number": {"precision": 1}}}},
                         "bottom": {"type": "Text", "text": ["Route ", {"bind": "attributes.route"}]}},
            "compactLeading": {"type": "Image", "systemName": "bicycle"},
            "compactTrailing": {"type": "Text", "text": {"bind": "state.speed", "format": {"number": {"precision": 0}}}},
            "minimal": {"type": "Text", "text": {"bind": "state.speed", "format": {"number": {"precision": 0}}}},
        },
    }, key=bike_key)

    with Scenario() as run:
        driver, page = run.driver, run.page
        run.at("open")
        driver.get(URL + "/")
        page.until("the live status", lambda: page.js("return document.getElementById('status').dataset.status") == "live")
        assert page.items() == [], page.state()
        assert page.island()["mode"] == "idle", page.state()
        print("ok: the display opens live, empty, the island idle")

        run.at("start")
        ride = start(bike_key, "RideAttributes", {"route": "Lakeside <b>loop</b>"}, {"speed": 21.44}, relevance=10)
        page.until("the ride's card", lambda: (page.item(ride) or {}).get("text", "").find("21.4 km/h") >= 0)
        card = page.item(ride)
        assert "Lakeside <b>loop</b>" in card["text"], card  # markup in a payload is text
        assert page.js("return document.querySelector('#list b') === null")
        page.until("the island compact with the ride", lambda: page.island()["mode"] == "compact" and page.island()["activity"] == ride)
        assert "21" in page.island()["text"], page.state()
        print("ok: a started activity shows on the Lock Screen and, compact, in the island; markup stays text")

        run.at("second activity")
        build = start(ci_key, "BuildAttributes", {"pipeline": "main #412"}, {"status": "running", "progress": 0.4}, relevance=50)
        page.until("the build above the ride", lambda: page.ids() == [build, ride])
        island = page.until("the minimal pair", lambda: page.island()["mode"] == "minimal" and page.island())
        assert island["activity"] == build and island["detached"] == ride, page.state()
        assert "21" in island["detachedText"], page.state()
        print("ok: by relevance, the build leads the Lock Screen and the island; the ride floats in the minimal bubble")

        run.at("update")
        api("POST", f"/v1/activities/{ride}/update", {"content": {"state": {"speed": 33.06}, "relevanceScore": 90}}, key=bike_key)
        page.until("the new speed", lambda: "33.1 km/h" in (page.item(ride) or {}).get("text", ""))
        page.until("the ride leading after its relevance rose", lambda: page.ids() == [ride, build] and page.island()["activity"] == ride)
        print("ok: an update changes the text in place and reorders by relevance")

        run.at("updates faster than the roll")
        # Each roll cell must hold a digit of the new value: a roll that began from the text of a
        # roll still running (both values run together) leaves cells with nothing coming in.
        page.js("""window.rollCells = 0; window.rollTrouble = [];
            new MutationObserver(function () {
              document.querySelectorAll('#list .islet-roll').forEach(function (cell) {
                window.rollCells++;
                if (cell.querySelector('.islet-roll-new').textContent === '') window.rollTrouble.push(cell.parentElement.textContent);
              });
            }).observe(document.getElementById('list'), { childList: true, subtree: true });""")
        for speed in [34.27, 35.48, 36.69, 37.91]:
            api("POST", f"/v1/activities/{ride}/update", {"content": {"state": {"speed": speed}, "relevanceScore": 90}}, key=bike_key)
            time.sleep(0.12)
        page.until("the last speed, rolled in", lambda: "37.9 km/h" in (page.item(ride) or {}).get("text", "")
                   and page.js("return document.querySelector('#list .islet-roll') === null"))
        assert page.js("return window.rollCells") > 0, "no roll seen"
        assert page.js("return window.rollTrouble") == [], page.js("return window.rollTrouble")
        print("ok: updates that come faster than the roll each roll from the value on screen")

        run.at("click to expand")
        driver.find_element(By.ID, "island").click()
        island = page.until("the expanded island, full width", lambda: page.island()["width"] > 360 and page.island())
        assert island["mode"] == "expanded" and "Route Lakeside" in island["text"], page.state()
        driver.find_element(By.ID, "island").click()
        page.until("the island back to minimal", lambda: page.island()["mode"] == "minimal")
        print("ok: a click expands the island and another collapses it")

        run.at("alert")
        api("POST", f"/v1/activities/{build}/update", {
            "content": {"state": {"status": "failed", "progress": 0.9}, "relevanceScore": 50},
            "alert": {"title": "Build failed", "body": "3 tests failed in IsletCoreTests"}}, key=ci_key)
        banner = page.until("the alert's banner", lambda: page.banner()["shown"] and page.banner())
        assert "Build failed" in banner["text"] and "3 tests failed" in banner["text"] and "Builds" in banner["text"], banner
        island = page.until("the island expanded for the alert", lambda: page.island()["mode"] == "expanded" and page.island())
        assert island["activity"] == build, page.state()
        page.until("the build's new status", lambda: "failed" in (page.item(build) or {}).get("text", ""))
        started = time.time()
        page.until("the island collapsing by itself", lambda: page.island()["mode"] == "minimal")
        page.until("the banner leaving", lambda: not page.banner()["shown"])
        print(f"ok: an alerting update shows a banner and expands the island for a few seconds ({time.time() - started:.1f} s more)")

        run.at("stale")
        soon = time.time() + 1.5
        api("POST", f"/v1/activities/{build}/update", {"content": {"state": {"status": "queued", "progress": 0}, "staleDate": soon}}, key=ci_key)
        page.until("the stale mark", lambda: (page.item(build) or {}).get("stale"))
        assert page.item(build)["state"] == "stale" and not page.item(ride)["stale"], page.state()
        print("ok: past its stale date an activity is marked stale")

        run.at("end")
        api("POST", f"/v1/activities/{ride}/end", {"content": {"state": {"speed": 0}}}, key=bike_key)
        page.until("the ended ride still on the Lock Screen, with its final content",
                   lambda: (page.item(ride) or {}).get("state") == "ended" and "0.0 km/h" in page.item(ride)["text"])
        page.until("the island without the ended ride", lambda: page.island()["mode"] == "compact" and page.island()["activity"] == build)
        print("ok: an ended activity stays on the Lock Screen with its final content and leaves the island")

        run.at("dismiss")
        item = driver.find_element(By.CSS_SELECTOR, f'.islet-item[data-id="{ride}"]')
        ActionChains(driver).move_to_element(item).perform()
        item.find_element(By.CSS_SELECTOR, ".islet-dismiss").click()
        page.until("the ride removed", lambda: ride not in page.ids())
        assert api("GET", f"/v1/activities/{ride}", key=bike_key)["activityState"] == "dismissed"
        history = api("GET", f"/v1/activities/{ride}/events", key=bike_key)["events"]
        assert any(e["type"] == "stateChanged" and e["data"].get("to") == "dismissed" for e in history), history
        print("ok: the dismiss button dismisses the activity, and its producer sees the event")

        run.at("swipe")
        other = start(bike_key, "RideAttributes", {"route": "Hills"}, {"speed": 18}, relevance=5)
        page.until("the second ride", lambda: other in page.ids())
        card = driver.find_element(By.CSS_SELECTOR, f'.islet-item[data-id="{other}"] .islet-card')
        ActionChains(driver).click_and_hold(card).move_by_offset(-60, 0).move_by_offset(-80, 0).move_by_offset(-60, 0).release().perform()
        page.until("the swiped ride removed", lambda: other not in page.ids())
        assert api("GET", f"/v1/activities/{other}", key=bike_key)["activityState"] == "dismissed"
        print("ok: swiping a card to the left dismisses it")

        run.at("immediate end")
        api("POST", f"/v1/activities/{build}/end", {"dismissalPolicy": "immediate"}, key=ci_key)
        page.until("an empty Lock Screen", lambda: page.items() == [])
        page.until("the idle island", lambda: page.island()["mode"] == "idle")
        print("ok: an activity ended with immediate dismissal leaves at once")

        run.at("truncation")
        api("PUT", "/v1/apps/com.example.ci/layouts/LogAttributes", {"lockScreen": {"type": "VStack", "children": [
            {"type": "Text", "text": f"Log line {i}"} for i in range(12)], "modifiers": [{"padding": 16}]}}, key=ci_key)
        tall = start(ci_key, "LogAttributes", {}, {})
        page.until("the tall card cut at 160 points", lambda: (page.item(tall) or {}).get("truncated"))
        assert page.item(tall)["height"] <= 160.5, page.state()
        print("ok: a card taller than 160 points is cut and marked")

        run.at("timers")
        api("PUT", "/v1/apps/com.example.ci/layouts/TimerAttributes", {"dateEncoding": "secondsSince1970", "lockScreen": {
            "type": "HStack", "children": [
                {"type": "Text", "text": "Next drink"},
                {"type": "Text", "timerInterval": {"start": {"bind": "state.start"}, "end": {"bind": "state.end"}}},
                {"type": "ProgressView", "timerInterval": {"start": {"bind": "state.start"}, "end": {"bind": "state.end"}}}],
            "modifiers": [{"padding": 16}]}}, key=ci_key)
        countdown = start(ci_key, "TimerAttributes", {}, {"start": time.time() - 60, "end": time.time() + 240})
        first = page.until("the countdown", lambda: "Next drink" in (page.item(countdown) or {}).get("text", "") and page.item(countdown)["text"])
        fill = lambda: page.js(f'return getComputedStyle(document.querySelector(\'.islet-item[data-id="{countdown}"] .la-progress\')).getPropertyValue("--p")')
        filled = fill()
        page.until("the countdown ticking with no update", lambda: page.item(countdown)["text"] != first)
        page.until("the timed progress advancing with no update", lambda: fill() != filled)
        print(f"ok: timers and timed progress advance by themselves ({first.split()[-1]} → {page.item(countdown)['text'].split()[-1]})")

        run.at("settings")
        toggle = driver.find_element(By.CSS_SELECTOR, '#apps li[data-bundle-id="com.example.ci"] input[name="activitiesEnabled"]')
        driver.execute_script("arguments[0].scrollIntoView()", toggle)
        toggle.click()
        page.until("the app's activities gone", lambda: tall not in page.ids())
        settings = api("GET", "/v1/devices/default/settings?bundleId=com.example.ci")["settings"][0]
        assert settings["activitiesEnabled"] is False, settings
        assert api("GET", f"/v1/activities/{tall}", key=ci_key)["activityState"] == "dismissed"
        print("ok: turning an app's Live Activities off in the panel ends its activities on this device")

        run.at("appearance")
        driver.find_element(By.CSS_SELECTOR, '#appearance input[value="dark"]').find_element(By.XPATH, "..").click()
        page.until("dark appearance", lambda: page.js("return document.getElementById('phone').classList.contains('la-dark')"))
        driver.find_element(By.CSS_SELECTOR, '#appearance input[value="light"]').find_element(By.XPATH, "..").click()
        page.until("light appearance", lambda: not page.js("return document.getElementById('phone').classList.contains('la-dark')"))
        print("ok: the appearance switches between light and dark")

        run.at("another device")
        api("POST", "/v1/devices", {"id": "kitchen", "name": "Kitchen iPad"})
        timer = start(bike_key, "RideAttributes", {"route": "Kitchen"}, {"speed": 1}, extra={"device": "kitchen"})
        driver.get(URL + "/devices/kitchen")
        page.until("the kitchen's activity only", lambda: page.ids() == [timer])
        assert "Kitchen iPad" in driver.find_element(By.ID, "device-name").text
        print("ok: /devices/{id} shows that device's activities")

        run.at("a device that does not exist")
        driver.get(URL + "/devices/nosuch")
        page.until("the page says there is no such device", lambda: page.js(
            "return document.getElementById('status').dataset.status") == "missing")
        assert driver.find_element(By.ID, "status").text == "no such device"
        assert "nosuch" in driver.find_element(By.ID, "message").text
        print("ok: /devices/{id} of no device says so instead of connecting for ever")


def keys():
    """A server that listens beyond loopback shows a display only with its device's key."""
    bike_key = api("POST", "/v1/apps", {"bundleId": "com.example.bike"})["apiKey"]
    with Scenario() as run:
        driver, page = run.driver, run.page
        run.at("no key")
        driver.get(URL + "/")
        page.until("the refusal", lambda: page.js("return document.getElementById('phone').dataset.error") == "401")
        message = driver.find_element(By.ID, "message").text
        assert "islet devices key default" in message, message
        print("ok: without its device's key the display says how to get one")

        run.at("key in the address")
        key = api("POST", "/v1/devices/default/key")["key"]
        driver.get(URL + "/#key=" + key)
        page.until("the live status", lambda: page.js("return document.getElementById('status').dataset.status") == "live")
        assert page.js("return location.hash") == "", "the key stays in the address bar"
        ride = start(bike_key, "RideAttributes", {"route": "Loop"}, {"speed": 7})
        page.until("the activity", lambda: page.ids() == [ride])
        print("ok: with the key in the address's fragment the display is live, and the key leaves the address bar")

        run.at("remembered")
        driver.get(URL + "/")
        page.until("the activity again", lambda: page.ids() == [ride])
        print("ok: the browser remembers the key")

        run.at("replaced")
        api("POST", "/v1/devices/default/key")
        driver.refresh()
        page.until("the refusal of the old key", lambda: page.js("return document.getElementById('phone').dataset.error") == "401")
        print("ok: a replaced key stops working at once")


def islet_js():
    """The Scripting app's LiveActivity flow, in a page, through /islet.js; the display shows it."""
    key = api("POST", "/v1/apps", {"bundleId": "com.example.water", "name": "Scripting"})["apiKey"]
    with open(os.path.join(os.path.dirname(__file__), "../../../Examples/Layouts/water-countdown/layout.json")) as file:
        layout = json.load(file)
    with Scenario() as run:
        driver, page = run.driver, run.page
        run.at("a page of one's own, served from --pages")
        driver.get(URL + "/pages/")
        page.until("its script loaded", lambda: page.js("return typeof LiveActivity") == "function")
        assert driver.title == "My activity", driver.title
        print("ok: a page in the pages directory is served at /pages/ and loads /islet.js")

        run.at("load")
        driver.get(URL + "/")
        page.until("the live status", lambda: page.js("return document.getElementById('status').dataset.status") == "live")
        driver.set_script_timeout(20)
        loaded = driver.execute_async_script("""
            const done = arguments[arguments.length - 1];
            const script = document.createElement('script');
            script.src = '/islet.js';
            script.onload = () => done(typeof LiveActivity);
            script.onerror = () => done('failed');
            document.head.appendChild(script);""")
        assert loaded == "function", loaded

        run.at("register, start, update")
        result = driver.execute_async_script("""
            const [key, layout, done] = arguments;
            (async () => {
              LiveActivity.configure({ key });
              const MyLiveActivity = LiveActivity.register('MyLiveActivity', layout);
              await MyLiveActivity.registered;
              window.states = [];
              const activity = MyLiveActivity();
              activity.addUpdateListener((state) => window.states.push(state));
              window.activity = activity;
              const enabled = await LiveActivity.areActivitiesEnabled();
              const started = await activity.start({ mins: 5 }, { relevanceScore: 10 });
              const state = await activity.getActivityState();
              const ids = await LiveActivity.getAllActivitiesIds();
              const updated = await activity.update({ mins: 4 }, { alert: { title: 'Drink', body: '4 minutes to go' } });
              done({ enabled, started, state, ids, updated, id: activity.activityId });
            })().catch((error) => done({ error: String(error) }));""", key, layout)
        assert "error" not in result, result
        assert result["enabled"] is True and result["started"] is True and result["updated"] is True, result
        assert result["state"] == "active" and result["ids"] == [result["id"]], result
        activity_id = result["id"]
        page.until("the countdown on the Lock Screen", lambda: "4 minutes left" in ((page.item(activity_id) or {}).get("text") or ""))
        banner = page.until("the alert's banner", lambda: page.banner()["shown"] and page.banner())
        assert "4 minutes to go" in banner["text"], banner
        print("ok: islet.js registers a layout, starts (true), reads the state, updates with an alert; the display shows it")

        run.at("from and end")
        result = driver.execute_async_script("""
            const [id, done] = arguments;
            (async () => {
              const again = LiveActivity.from(id, 'MyLiveActivity');
              const ended = await again.end({ mins: 0 }, { dismissTimeInterval: 0 });
              done({ ended, state: await LiveActivity.getActivityState(id) });
            })().catch((error) => done({ error: String(error) }));""", activity_id)
        assert result == {"ended": True, "state": "dismissed"}, result
        page.until("the listener hearing ended then dismissed", lambda: page.js("return window.states") == ["ended", "dismissed"])
        page.until("the card gone", lambda: activity_id not in page.ids())
        print("ok: from(id) ends it with dismissTimeInterval 0; the listener hears ended then dismissed; the card leaves")

        run.at("endAllActivities and a refused start")
        result = driver.execute_async_script("""
            const done = arguments[arguments.length - 1];
            (async () => {
              const factory = LiveActivity.register('MyLiveActivity');
              await factory().start({ mins: 3 });
              await factory().start({ mins: 2 });
              const before = (await LiveActivity.getAllActivities()).map((detail) => detail.state);
              await LiveActivity.endAllActivities({ dismissTimeInterval: 60 });
              const after = (await LiveActivity.getAllActivities()).map((detail) => detail.state);
              const unstarted = await factory().update({ mins: 1 });
              done({ before, after, unstarted });
            })().catch((error) => done({ error: String(error) }));""")
        assert result == {"before": ["active", "active"], "after": ["ended", "ended"], "unstarted": False}, result
        api("PUT", "/v1/devices/default/settings", {"bundleId": "com.example.water", "activitiesEnabled": False})
        result = driver.execute_async_script("""
            const done = arguments[arguments.length - 1];
            (async () => {
              const activity = LiveActivity.register('MyLiveActivity')();
              const started = await activity.start({ mins: 5 });
              done({ enabled: await LiveActivity.areActivitiesEnabled(), started, reason: activity.lastError && activity.lastError.reason });
            })().catch((error) => done({ error: String(error) }));""")
        assert result == {"enabled": False, "started": False, "reason": "denied"}, result
        print("ok: endAllActivities ends every one; with Live Activities off, start resolves false (denied)")


def sizing():
    """Views sized by SwiftUI's rules on the live display: a linear ProgressView takes the room
    an HStack leaves it; text beside the camera is one line, truncated; an alert's banner covers
    the clock; a label beside a long value stays whole."""
    key = api("POST", "/v1/apps", {"bundleId": "com.example.sizing"})["apiKey"]
    now = int(time.time())
    layout = {
        "dateEncoding": "secondsSince1970",
        "lockScreen": {"type": "HStack", "children": [
            {"type": "ProgressView", "timerInterval": {"start": {"bind": "state.start"}, "end": {"bind": "state.end"}}},
            {"type": "Text", "timerInterval": {"start": {"bind": "state.start"}, "end": {"bind": "state.end"}}}]},
        "dynamicIsland": {
            "compactLeading": {"type": "Image", "systemName": "hammer.fill"},
            "compactTrailing": {"type": "Text", "text": {"bind": "state.status"}},
            "minimal": {"type": "Text", "text": {"bind": "state.status"}},
            "expanded": {"leading": {"type": "Text", "text": "Build"},
                         "bottom": {"type": "ProgressView", "value": {"bind": "state.done"}}},
        },
    }
    api("PUT", "/v1/apps/com.example.sizing/layouts/Sizing", layout, key=key)
    activity = start(key, "Sizing", {}, {"start": now - 60, "end": now + 240, "status": "Pending", "done": 0.5})
    with Scenario() as run:
        driver, page = run.driver, run.page
        driver.get(URL + "/")
        page.until("the activity", lambda: page.ids() == [activity])

        run.at("a ProgressView in an HStack")
        widths = page.js("""
            const card = document.querySelector('.islet-card'), bar = card.querySelector('.la-progress-linear'),
                  timer = card.querySelector('.la-timer');
            return {card: card.clientWidth, bar: bar.offsetWidth, timer: timer.offsetWidth};""")
        # SwiftUI: the timer at its own width, the bar all the rest (less the stack's spacing and the card's padding).
        assert widths["bar"] > widths["card"] - widths["timer"] - 60, widths
        print("ok: a linear ProgressView in an HStack takes the room the timer leaves", widths)

        run.at("compact text truncates")
        page.until("the island compact", lambda: page.island()["mode"] == "compact")
        text = page.js("""
            const text = document.querySelector('#island .islet-trailing .la-text');
            const style = getComputedStyle(text);
            return {lines: Math.round(text.offsetHeight / parseFloat(style.lineHeight || '17')), height: text.offsetHeight,
                    clipped: text.scrollWidth > text.clientWidth, whiteSpace: style.whiteSpace, overflow: style.textOverflow};""")
        assert text["whiteSpace"] == "nowrap" and text["overflow"] == "ellipsis" and text["clipped"], text
        assert text["height"] < 24, text
        print("ok: compact trailing text is one line, truncated with an ellipsis", text)

        run.at("the expanded bottom's progress")
        driver.find_element(By.ID, "island").click()
        page.until("expanded", lambda: page.island()["mode"] == "expanded")
        page.until("the island at its expanded width", lambda: page.island()["width"] == 371)
        bar = page.js("return document.querySelector('#island .islet-bottom .la-progress-linear').offsetWidth")
        assert bar > 250, bar
        print("ok: the expanded island's bottom progress spans it", bar)

        run.at("the banner covers the clock")
        api("POST", f"/v1/activities/{activity}/update", {"content": {"state": {"start": now - 60, "end": now + 240, "status": "Running", "done": 0.6}},
            "alert": {"title": "Build", "body": "Running"}}, key=key)
        page.until("the banner", lambda: page.banner()["shown"])
        seen = """
            const clock = document.getElementById('time').getBoundingClientRect();
            const points = [];
            for (let y = clock.top + 2; y < clock.bottom; y += 8) points.push([clock.left + clock.width / 2, y]);
            return points.filter(([x, y]) => {
              const element = document.elementFromPoint(x, y);
              return element && element.closest('.islet-clock');
            }).length;"""
        # Wherever the clock is, nothing of it shows while the banner is there…
        page.until("no part of the clock showing", lambda: page.js(seen) == 0)
        print("ok: an alert's banner covers the clock")
        # …and it comes back when the banner goes.
        page.until("the banner gone", lambda: not page.banner()["shown"])
        page.until("the clock back", lambda: page.js(seen) > 0)

        run.at("a label beside a long value")
        # The default card's rows: a label, a spacer, a one-line value. SwiftUI keeps the label
        # whole and truncates the value; the label does not break between its letters.
        row = start(key, "Waiting", {}, {"status": "waiting for a runner in the eu-west-2 pool with a very long name indeed"})
        page.until("the second card", lambda: row in page.ids())
        label = page.js("""
            const card = [...document.querySelectorAll('.islet-item')].find(item => item.innerText.includes('waiting for a runner'));
            const texts = [...card.querySelectorAll('.la-hstack > .la-text')];
            const label = texts.find(t => t.innerText === 'Status'), value = texts.find(t => t.innerText.startsWith('waiting'));
            const lineHeight = parseFloat(getComputedStyle(label).lineHeight) || 20;
            return {labelHeight: label.offsetHeight, lineHeight, labelWhole: label.scrollWidth <= label.clientWidth + 1,
                    valueHeight: value.offsetHeight, valueClipped: value.scrollHeight > value.clientHeight + 1 || value.scrollWidth > value.clientWidth + 1};""")
        assert label["labelHeight"] < 1.5 * label["lineHeight"] and label["labelWhole"], label
        assert label["valueHeight"] < 1.5 * label["lineHeight"] and label["valueClipped"], label
        print("ok: a label beside a long value stays whole on one line; the value truncates", label)


if __name__ == "__main__":
    {"keys": keys, "islet-js": islet_js, "sizing": sizing}.get(sys.argv[1] if len(sys.argv) > 1 else "", main)()
