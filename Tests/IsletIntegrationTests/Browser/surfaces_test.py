"""Every place a Live Activity shows, on the web display (docs/surfaces.md): the Apple Watch's
Smart Stack, CarPlay's Dashboard, the Mac's menu bar, the iPad's Lock Screen and StandBy, beside
the phone, for the three reference scenarios (the ride, the build, the countdown) with and
without a `small` region.

Started by BrowserTests.swift with ISLET_URL and ISLET_ADMIN_KEY set. Each scenario runs on a
device of its own, so each surface shows it alone. Every frame is measured in CSS pixels against
Apple's size for it; after an end, CarPlay and the island drop the card at once and the others
keep it. With ISLET_SCREENSHOTS set, each surface is saved there as surface-NAME-….png.
"""

import copy
import json
import os
import sys
import time

from display_test import Scenario, api, start
from selenium.webdriver.common.by import By

HERE = os.path.dirname(os.path.abspath(__file__))
LAYOUTS = os.path.join(HERE, "../../../Examples/Layouts")
SHOTS = os.environ.get("ISLET_SCREENSHOTS")
SWIFT_EPOCH = 978307200  # 2001-01-01, where Swift's Date counts from
OTHERS = ["watch", "carplay", "mac", "ipad", "standby"]

# Apple's sizes in points (Surface.sizes: the display draws each surface's first size).
SIZES = {"watch": (191, 81.5), "carplay": (240, 78), "standby": (852, 393)}


def scenarios():
    """(name, folder, bundle id, app name, type, attributes, state, the small region's label)."""
    now = time.time()
    with open(os.path.join(LAYOUTS, "bike-computer", "attributes.json")) as file:
        ride = json.load(file)
    ride["startDate"] = now - SWIFT_EPOCH - 23 * 60 - 41
    return [
        ("ride", "bike-computer", "com.example.bike", "Bike Computer", "BikeAttributes", ride,
         {"speed": 27.4, "distance": 12.4, "averageSpeed": 21.6}, "Morning ride"),
        ("build", "ci-build", "com.example.ci", "AppCircle", "StatusAttribute", {"buildId": "123456789"},
         {"status": "inProgress", "estimatedCompletionTime": now - SWIFT_EPOCH + 252}, "Build #123456789"),
        ("countdown", "water-countdown", "com.example.water", "Scripting", "MyLiveActivity", {},
         {"mins": 4, "startDate": int((now - 72) * 1000), "endDate": int((now + 228) * 1000)}, "Next drink"),
    ]


def frames(page):
    """Each surface's frame on the page: present or not, its CSS size, its text."""
    return page.js("""
        const measure = (element) => element && {width: element.getBoundingClientRect().width,
            height: element.getBoundingClientRect().height, text: element.innerText, small: element.dataset.small || ''};
        const menu = document.querySelector('#surface-mac .islet-menubar-item');
        return {
          watch: measure(document.querySelector('#surface-watch .islet-watch')),
          carplay: measure(document.querySelector('#surface-carplay .islet-carplay')),
          mac: measure(menu), popover: measure(document.querySelector('#surface-mac .islet-mac-popover .islet-expanded')),
          ipad: measure(document.querySelector('#surface-ipad .islet-card')),
          standby: measure(document.querySelector('#surface-standby .islet-standby')),
          standbyCard: measure(document.querySelector('#surface-standby .islet-card')),
          island: document.getElementById('island').dataset.mode,
          lockScreen: document.querySelectorAll('#list .islet-item:not([data-leaving])').length,
        };""")


def shoot(driver, name, places):
    """Saves each of places beside the phone as surface-NAME-PLACE.png, the Mac's popover open;
    nothing without ISLET_SCREENSHOTS."""
    if not SHOTS:
        return
    open_popover(driver)
    for place in places:
        element = driver.find_element(By.CSS_SELECTOR, f'.islet-place[data-place="{place}"]')
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
        time.sleep(0.2)
        element.screenshot(os.path.join(SHOTS, f"surface-{name}-{place}.png"))


def open_popover(driver):
    """Clicks the Mac's menu bar item unless its expanded popover is open."""
    if not driver.execute_script("return document.getElementById('surface-mac').classList.contains('islet-open')"):
        driver.find_element(By.CSS_SELECTOR, "#surface-mac .islet-menubar-item").click()


def close(a, b):
    return abs(a - b) < 0.51


def main():
    # Screenshots at twice the points, as the display's own (display_screenshots.py); sizes are
    # measured in CSS pixels all the same.
    with Scenario(["--force-device-scale-factor=2"] if SHOTS else []) as run:
        driver, page = run.driver, run.page
        driver.set_window_size(1500, 1700)
        for name, folder, bundle_id, app_name, type_name, attributes, state, label in scenarios():
            key = api("POST", "/v1/apps", {"bundleId": bundle_id, "name": app_name})["apiKey"]
            with open(os.path.join(LAYOUTS, folder, "layout.json")) as file:
                layout = json.load(file)
            without = copy.deepcopy(layout)
            del without["small"], without["supplementalFamilies"]
            api("PUT", f"/v1/apps/{bundle_id}/layouts/{type_name}", layout, key=key)
            api("PUT", f"/v1/apps/{bundle_id}/layouts/{type_name}Compact", without, key=key)
            ids = {}
            for variant, type_suffix in [("small", ""), ("compact", "Compact")]:
                device = f"{name}-{variant}"
                api("POST", "/v1/devices", {"id": device, "name": f"{name} ({variant})"})
                ids[variant] = start(key, type_name + type_suffix, attributes, state, extra={"device": device})

                run.at(f"{device}: every frame")
                for appearance in ["light", "dark"]:
                    driver.get(f"{page_url()}/devices/{device}?surfaces=all&appearance={appearance}")
                    seen = page.until("every surface's frame", lambda: all_present(frames(page)) and frames(page))
                    time.sleep(0.6)  # the entrance animations and the first tick
                    # The watch and CarPlay are dark only, and only they draw the small region.
                    places = [p for p in OTHERS if (appearance == "dark" or p not in ("watch", "carplay"))
                              and (variant == "small" or p in ("watch", "carplay"))]
                    shoot(driver, f"{name}-{variant}-{appearance}", places)
                for place, (width, height) in SIZES.items():
                    assert close(seen[place]["width"], width) and close(seen[place]["height"], height), (place, seen[place])
                assert close(seen["ipad"]["width"], 500) and 84 <= seen["ipad"]["height"] <= 160.5, seen["ipad"]
                # StandBy draws the Lock Screen view at twice its size.
                assert close(seen["standbyCard"]["width"], 722), seen["standbyCard"]
                assert close(seen["mac"]["height"], 37), seen["mac"]
                for place in ["watch", "carplay"]:
                    if variant == "small":
                        assert seen[place]["small"] == "small" and label in seen[place]["text"], (place, seen[place])
                    else:
                        # Apple's fallback: the compact leading and trailing views, side by side.
                        assert seen[place]["small"] == "fallback" and label not in seen[place]["text"], (place, seen[place])
                        slots = page.js(f"return document.querySelectorAll('#surface-{place} .islet-small-fallback > .islet-slot [data-n]').length")
                        assert slots >= 2, (place, slots)
                open_popover(driver)
                popover = page.until("the Mac's expanded popover", lambda: (frames(page)["popover"] or {}).get("width"))
                assert close(popover, 371), popover
                print(f"ok: {name} {'with' if variant == 'small' else 'without'} a small region: the watch "
                      f"{seen['watch']['width']:g}×{seen['watch']['height']:g}, CarPlay 240×78 ({seen['carplay']['small']}), "
                      f"the Mac's item and its 371-point popover, the iPad's 500-point card, StandBy 852×393")

            run.at(f"{name}: the end")
            device = f"{name}-small"
            driver.get(f"{page_url()}/devices/{device}?surfaces=all")
            page.until("every surface's frame", lambda: all_present(frames(page)))
            live(page)
            api("POST", f"/v1/activities/{ids['small']}/end", {}, key=key)
            after = page.until("CarPlay and the island without the ended activity",
                               lambda: frames(page)["carplay"] is None and frames(page)["island"] == "idle" and frames(page))
            for place in ["watch", "mac", "ipad", "standby"]:
                assert after[place] is not None, (place, after)
            assert after["lockScreen"] == 1, after
            snapshot = api("GET", f"/v1/devices/{device}/display")
            assert snapshot["activities"][0]["surfaces"] == ["lockScreen", "watch", "mac", "ipad", "standby"], snapshot["activities"][0]["surfaces"]
            print(f"ok: {name} ended: CarPlay and the island drop it at once; the Lock Screen, the watch, the Mac, the iPad and StandBy keep it")

        run.at("an alert on the watch")
        key = api("POST", "/v1/apps", {"bundleId": "com.example.alerts"})["apiKey"]
        api("POST", "/v1/devices", {"id": "alerts", "name": "alerts"})
        alerted = start(key, "TimerAttributes", {}, {"minutes": 4}, extra={"device": "alerts"})
        driver.get(f"{page_url()}/devices/alerts?surfaces=watch")
        page.until("the watch's card", lambda: frames(page)["watch"])
        live(page)
        api("POST", f"/v1/activities/{alerted}/update", {"content": {"state": {"minutes": 1}},
            "alert": {"title": "Tea", "body": "One minute left"}}, key=key)
        text = page.until("the alert on the watch", lambda: page.js(
            "const a = document.querySelector('#surface-watch .islet-watch-alert'); return a && a.innerText"))
        assert "Tea" in text and "One minute left" in text, text
        assert page.js("return document.querySelectorAll('.islet-watch-alert').length") == 1
        if SHOTS:
            element = driver.find_element(By.CSS_SELECTOR, '.islet-place[data-place="watch"]')
            element.screenshot(os.path.join(SHOTS, "surface-alert-watch.png"))
        print("ok: an alert's title and body show on the watch")

        run.at("several activities")
        second = start(key, "KettleAttributes", {}, {"minutes": 2}, relevance=10, extra={"device": "alerts"})
        driver.get(f"{page_url()}/devices/alerts?surfaces=all")
        bubbles = page.until("the Mac's menu bar with a minimal view each", lambda: page.js(
            "return document.querySelectorAll('#surface-mac .islet-menubar-minimal .islet-bubble').length") == 2)
        seen = frames(page)
        assert "Kettle" in seen["watch"]["text"] and "Kettle" in seen["carplay"]["text"], seen
        assert page.js("return document.getElementById('surface-ipad').querySelectorAll('.islet-card').length") == 2
        assert page.js("return document.getElementById('surface-watch').dataset.activities") == second
        print("ok: with several activities the watch, CarPlay and StandBy show the most relevant, the Mac a minimal view each, the iPad them all")

        run.at("the panel's choice")
        driver.get(f"{page_url()}/devices/alerts?surfaces=watch")
        page.until("the watch's card", lambda: frames(page)["watch"])
        hidden = lambda: page.js("""return [...document.querySelectorAll('.islet-place')]
            .filter(place => place.offsetParent !== null).map(place => place.dataset.place)""")
        assert hidden() == ["watch"], hidden()
        driver.find_element(By.CSS_SELECTOR, '#surfaces-choice input[value="all"]').find_element(By.XPATH, "..").click()
        page.until("every place", lambda: hidden() == OTHERS)
        driver.find_element(By.CSS_SELECTOR, '#surfaces-choice input[value="phone"]').find_element(By.XPATH, "..").click()
        page.until("the phone alone", lambda: hidden() == [])
        driver.get(f"{page_url()}/devices/alerts")
        page.until("the choice remembered", lambda: page.js("return document.getElementById('surfaces').dataset.show") == "phone")
        print("ok: the panel's Surfaces choice shows the phone alone, with the watch, or every place, and is remembered")

        if SHOTS:
            run.at("every place, one page")
            for appearance in ["light", "dark"]:
                driver.get(f"{page_url()}/devices/ride-compact?surfaces=all&appearance={appearance}")
                page.until("every surface's frame", lambda: all_present(frames(page)))
                open_popover(driver)
                time.sleep(0.8)
                driver.find_element(By.CSS_SELECTOR, ".islet-stage").screenshot(os.path.join(SHOTS, f"surfaces-every-place-{appearance}.png"))


def live(page):
    """Waits until the page follows the device's events."""
    page.until("the live status", lambda: page.js("return document.getElementById('status').dataset.status") == "live")


def all_present(seen):
    return all(seen[place] for place in OTHERS)


def page_url():
    return os.environ["ISLET_URL"]


if __name__ == "__main__":
    main()
