"""The console in a real headless Chromium, driven by Selenium, against two running Islets.

Started by ConsoleBrowserTests.swift: A (ISLET_URL, ISLET_ADMIN_KEY) is the backend whose console
is tested, on loopback, so its console opens without a key; B (APPLE_URL) plays Apple for it. A
delivery of LOOP_ACTIVITY (an app of LOOP_APP_KEY's) was refused by B with 500 (B answers half
its requests so) and then accepted. Each step acts through the REST API, as producers and operators do, and waits for the
page to show it. Prints one "ok:" line per step; with SHOTS set, saves every view at desktop and
phone widths, light and dark, there.
"""

import os
import sys
import time
import urllib.parse

from display_test import ADMIN, URL, Scenario, api, browser, screenshots  # noqa: F401 (browser: used by Scenario)
from selenium.webdriver.common.by import By

APPLE = os.environ["APPLE_URL"]
LOOP_ACTIVITY = os.environ["LOOP_ACTIVITY"]
LOOP_APP_KEY = os.environ["LOOP_APP_KEY"]
DROPPED_ON_B = os.environ["DROPPED_ON_B"]
SHOTS = os.environ.get("SHOTS")


def text(page, selector):
    return page.js("const n = document.querySelector(arguments[0]); return n ? n.innerText : null;", selector)


def attributes(page, selector, name):
    """One attribute of every element a selector finds, read at once (the views redraw live)."""
    return page.js("return Array.from(document.querySelectorAll(arguments[0])).map(n => n.getAttribute(arguments[1]))", selector, name)


def texts(page, selector):
    return page.js("return Array.from(document.querySelectorAll(arguments[0])).map(n => n.innerText)", selector)


def click(page, selector):
    page.js("document.querySelector(arguments[0]).click()", selector)


def cut_cells(page, driver, table):
    """What a phone's width hides or cuts of a table: at 390 points, every cell of its first rows
    must be on the page whole, its content within it, and the page must not scroll sideways."""
    driver.set_window_size(390, 900)
    try:
        return page.until("the table at 390 points", lambda: page.js("""
            const width = document.documentElement.clientWidth, problems = [];
            const rows = Array.from(document.querySelectorAll(arguments[0] + ' tbody tr')).slice(0, 4);
            if (!rows.length) return null;
            for (const row of rows) for (const cell of row.cells) {
              const box = cell.getBoundingClientRect(), name = cell.dataset.label || cell.cellIndex;
              if (box.width === 0 || box.height === 0) problems.push(name + ' hidden');
              else if (box.left < -1 || box.right > width + 1) problems.push(name + ' cut at ' + Math.round(box.right) + ' of ' + width);
              else if (cell.scrollWidth > cell.clientWidth + 1) problems.push(name + ' wider than its cell');
            }
            if (document.documentElement.scrollWidth > width + 1) problems.push('the page scrolls sideways');
            return {problems: problems};""", table))["problems"]
    finally:
        driver.set_window_size(1280, 1000)


def shoot(scenario, name):
    """Every view at 1280 and 390 points wide, light and dark, the whole page tall."""
    screenshots(scenario.driver, SHOTS, name)


def main():
    ci_key = api("POST", "/v1/apps", {"bundleId": "com.example.ci", "name": "Builds"})["apiKey"]

    with Scenario() as scenario:
        page, driver = scenario.page, scenario.driver
        driver.set_window_size(1280, 1000)

        scenario.at("overview counts what was done")
        driver.get(URL + "/console")
        page.until("the stream live", lambda: text(page, "#live") == "live")
        before = api("GET", "/v1/overview")["activities"]["active"]
        builds = []
        for index in range(3):
            builds.append(api("POST", "/v1/activities", {
                "bundleId": "com.example.ci", "attributesType": "BuildAttributes", "attributes": {"repo": "islet", "number": index},
                "content": {"state": {"status": "running", "step": "build"}}}, key=ci_key))
        now = time.time()
        for step, stamp in [("test", now), ("lint", now + 1), ("package", now + 2), ("sign", now + 3)]:
            api("POST", f"/v1/activities/{builds[0]['id']}/update", {"content": {"state": {"status": "running", "step": step}}, "timestamp": stamp}, key=ci_key)
        try:
            api("POST", f"/v1/activities/{builds[0]['id']}/update", {"content": {"state": {"status": "running", "step": "old"}}, "timestamp": now - 60}, key=ci_key)
            raise AssertionError("an older update was applied")
        except AssertionError as error:
            if "409" not in str(error):
                raise
        page.until("3 more active", lambda: text(page, '[data-state="active"]') == str(before + 3))
        page.until("the drop under its reason", lambda: text(page, '[data-count="olderTimestamp"]') == "1")
        assert "older than the last applied update" in text(page, '[data-reason="olderTimestamp"]')
        page.until("4 updates counted", lambda: float((text(page, '[data-rate="updates"]') or "0").rstrip("/s")) > 0)
        assert text(page, "#apps") == "2", text(page, "#apps")
        # The store: SQLite's one file, which no failover concerns (FailoverTests shows PostgreSQL's).
        assert text(page, '#store [data-store="kind"]') == "SQLite", text(page, "#store")
        assert text(page, '#store [data-store="location"]').endswith("islet.sqlite"), text(page, "#store")
        assert text(page, '#store [data-store="replication"]') == "none", text(page, "#store")
        print("ok: the overview counts 3 starts, the updates and the ignored one under its reason, and says the store is SQLite")
        shoot(scenario, "overview")

        scenario.at("the overview's counts are the server's, since it started")
        # A's deliveries to B were refused with 500 and accepted before the page opened.
        page.until("Apple's 500 and 200", lambda: int(text(page, '#answers [data-count="500"]') or 0) > 0
                   and int(text(page, '#answers [data-count="200"]') or 0) > 0)
        counts = {name: text(page, f'[data-count="{name}"]') for name in ("olderTimestamp", "500", "200")}
        driver.refresh()
        page.until("the stream live", lambda: text(page, "#live") == "live")
        page.until("the same counts after a reload", lambda: all(
            int(text(page, f'[data-count="{name}"]') or 0) >= int(count) for name, count in counts.items()))
        assert text(page, '[data-count="olderTimestamp"]') == "1", text(page, "#drops")
        print("ok: the overview's counts come from the server: Apple's answers before the page opened, the same after a reload")

        scenario.at("the table finds and opens an activity")
        driver.get(URL + "/console/activities")
        page.until("the activities listed", lambda: len(attributes(page, "#activities tbody tr[data-id]", "data-id")) == 5)
        search = driver.find_element(By.CSS_SELECTOR, 'input[type="search"]')
        search.send_keys(builds[1]["id"][:8].lower())
        page.until("one match", lambda: attributes(page, "#activities tbody tr[data-id]", "data-id") == [builds[1]["id"]])
        assert "q=" in driver.current_url
        assert cut_cells(page, driver, "#activities") == [], "the activities table at 390 points"
        shoot(scenario, "activities")
        click(page, "#activities tbody tr[data-id]")
        page.until("its timeline", lambda: driver.current_url.endswith("/console/activities/" + builds[1]["id"]))
        print("ok: the table searches by the id's first characters and opens the activity at its own address")

        scenario.at("an ignored update shows its reason on the timeline")
        driver.get(URL + "/console/activities/" + builds[0]["id"])
        ignored = page.until("the ignored update", lambda: texts(page, '#events tr[data-type="updateIgnored"]'))
        assert "older than the last applied update" in ignored[0], ignored[0]
        assert len(texts(page, ".axis circle.ignored")) == 1
        click(page, '#events tr[data-type="updateIgnored"]')
        page.until("the presentation then", lambda: "sign" in (text(page, "#preview") or "").lower())
        click(page, "#raw summary")
        assert "olderTimestamp" in text(page, "#raw pre")
        assert cut_cells(page, driver, "#events") == [], "the timeline's table at 390 points"
        print("ok: the timeline shows the ignored update's reason, the card as it was then, and the raw event")
        shoot(scenario, "timeline")

        scenario.at("a failed and retried delivery shows both attempts")
        driver.get(URL + "/console/activities/" + LOOP_ACTIVITY)
        rows = page.until("both attempts", lambda: [row for row in texts(page, '#events tr[data-type="delivery"]')
                                                   if "Apple 500" in row or "Apple accepted it" in row] or None)
        refused = [row for row in rows if "Apple 500" in row]
        accepted = [row for row in rows if "Apple accepted it" in row]
        assert refused and accepted, rows
        number = refused[0].split("Delivery ")[1].split(" ")[0]
        assert any(("Delivery " + number + " ") in row for row in accepted), rows
        assert "attempt 1" in refused[-1], rows
        # Under the title, "why isn't it showing?": the phone's side and the app's budget there.
        standing = page.until("its standing", lambda: text(page, "#standing"))
        assert "push service accepted" in standing and "priority-10 pushes left this hour" in standing, standing
        assert "Last refusal: 500 InternalServerError" in standing, standing
        shoot(scenario, "delivery")
        print("ok: the delivery Apple refused with 500 shows its first attempt and the second it accepted")

        scenario.at("an app's key sees its app only")
        driver.get(URL + "/console/activities#key=" + urllib.parse.quote(ci_key))
        page.until("its activities", lambda: len(attributes(page, "#activities tbody tr[data-id]", "data-id")) == 3)
        assert "key=" not in driver.current_url
        assert text(page, "#scope") == "app com.example.ci"
        driver.get(URL + "/console/activities/" + LOOP_ACTIVITY)
        page.until("not found", lambda: text(page, "main h1") == "Not found")
        driver.get(URL + "/console")
        page.until("its own figures", lambda: text(page, "#apps") == "1")
        driver.execute_script("sessionStorage.clear()")
        print("ok: with an app's key the console shows that app only, not another app's activity even by its address")

        scenario.at("an action takes effect and appears live")
        driver.get(URL + "/console/activities/" + builds[2]["id"])
        page.until("the end button", lambda: texts(page, "#end"))
        click(page, "#end")
        page.until("the confirmation", lambda: page.js("return document.getElementById('confirm-dialog').open"))
        driver.find_element(By.ID, "confirm-ok").click()
        page.until("the end on the timeline", lambda: "Now ended" in (text(page, "#events") or ""))
        assert api("GET", "/v1/activities/" + builds[2]["id"])["activityState"] == "ended"
        shown = api("GET", "/v1/devices/default/display")["activities"]
        assert [item["state"] for item in shown if item["id"] == builds[2]["id"]] == ["ended"], shown
        print("ok: ending from the timeline, after confirming, ends the activity; the timeline and the display show it")

        scenario.at("pushes to Islet's APNs endpoint")
        driver.get(APPLE + "/console/pushes")
        rows = page.until("A's requests", lambda: texts(page, "#pushes tbody tr[data-request]") or None)
        assert any("500" in row for row in rows) and any("200" in row for row in rows), rows
        assert any("POST /3/device/" in row for row in rows), rows
        click(page, "#pushes details summary")
        assert "(signature left out)" in text(page, "#pushes pre"), text(page, "#pushes pre")
        assert cut_cells(page, driver, "#pushes") == [], "the pushes table at 390 points"
        shoot(scenario, "pushes")
        print("ok: the APNs endpoint's log shows A's requests, refused and accepted, with readable headers")

        scenario.at("a push the phone dropped says why, links to its activity, and open rows stay open")
        dropped = page.until("the dropped push", lambda: page.js("""
            const row = Array.from(document.querySelectorAll('#pushes tbody tr[data-request]'))
              .find(row => row.innerText.includes('the activity had ended'));
            const link = row && row.querySelector('a[data-link]');
            return link ? {request: row.dataset.request, href: link.getAttribute('href'), text: row.innerText} : null;"""))
        assert dropped["href"] == "/console/activities/" + DROPPED_ON_B, dropped
        assert "200" in dropped["text"], dropped
        opened = attributes(page, "#pushes tbody tr[data-request]", "data-request")[0]
        if not page.js("return document.querySelector(arguments[0]).open", f'#pushes tr[data-request="{opened}"] details'):
            click(page, f'#pushes tr[data-request="{opened}"] details summary')
        newest = int(opened)
        api("POST", f"/v1/activities/{LOOP_ACTIVITY}/update", {"content": {"state": {"status": "one more"}}}, key=LOOP_APP_KEY)
        page.until("A's next request", lambda: int(attributes(page, "#pushes tbody tr[data-request]", "data-request")[0]) > newest)
        assert page.js("return document.querySelector(arguments[0]).open", f'#pushes tr[data-request="{opened}"] details'), \
            "the request opened was closed by the refresh"
        click(page, '#pushes tr[data-request="%s"] a[data-link]' % dropped["request"])
        page.until("the activity's timeline", lambda: driver.current_url.endswith("/console/activities/" + DROPPED_ON_B))
        page.until("the drop on it", lambda: "the activity had ended" in (text(page, "#events") or ""))
        print("ok: a push B's phone dropped shows why, in words, and opens its activity; a request opened stays open as new ones arrive")

        scenario.at("nothing loaded from elsewhere")
        for origin in (URL, APPLE):
            driver.get(origin + "/console")
            page.until("the stream live", lambda: text(page, "#live") == "live")
            names = page.js("return performance.getEntriesByType('resource').map(e => e.name).concat([location.href])")
            foreign = [name for name in names if not name.startswith(origin + "/")]
            assert not foreign, foreign
        print("ok: every request the console makes goes to its own server")


if __name__ == "__main__":
    main()
