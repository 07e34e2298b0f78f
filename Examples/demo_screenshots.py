"""Screenshots of every `islet demo` on the web display: for each, the Lock Screen with the island
compact (light), the same dark, the island expanded, and the island minimal beside another
activity; and the bike ride from its start to its summary.

Run by demo-screenshots.sh against a server of its own:
    python3 demo_screenshots.py URL APNS_URL DATA_DIRECTORY OUTPUT_DIRECTORY ISLET...
Each demo is played faster than real time in headless Chromium (Selenium, with Debian's
chromium-driver); the pictures are taken while it plays, and it is stopped (Ctrl-C ends its
activity) and cleared away before the next.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

URL, APNS, DATA, OUT = sys.argv[1:5]
ISLET = sys.argv[5:]
ADMIN = open(os.path.join(DATA, "admin.key")).read().strip()

options = Options()
for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=900,1100",
                 "--force-device-scale-factor=1",  # 393 pt wide: as sharp as the pages show them, a fraction of the bytes
                 "--force-prefers-reduced-motion"]:  # transitions settle at once: sharp pictures
    options.add_argument(argument)
driver = webdriver.Chrome(service=Service(os.environ.get("ISLET_CHROMEDRIVER", "/usr/bin/chromedriver")), options=options)


def api(method, path, body=None):
    request = urllib.request.Request(URL + path, method=method, data=None if body is None else json.dumps(body).encode())
    request.add_header("Authorization", "Bearer " + ADMIN)
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=10) as response:
        text = response.read()
        return json.loads(text) if text else None


def islet(*arguments):
    return subprocess.Popen(ISLET + list(arguments) + ["--server", URL, "--data", DATA],
                            env={**os.environ, "ISLET_APNS_URL": APNS, "ISLET_KEY": ""},
                            stdout=subprocess.DEVNULL)


def card_text():
    return driver.execute_script("const c = document.querySelector('#list .islet-item'); return c ? c.innerText : ''")


def ride_seconds():
    """The ride's time on the card (`m:ss`), in seconds."""
    found = re.search(r"\b(\d+):(\d\d)\b", card_text())
    return int(found.group(1)) * 60 + int(found.group(2)) if found else -1


def island_mode():
    return driver.execute_script("return document.getElementById('island').dataset.mode")


def shoot(name):
    time.sleep(0.9)  # the content transitions
    path = os.path.join(OUT, name)
    driver.find_element(By.ID, "phone").screenshot(path)
    print(path, flush=True)


def display(appearance):
    driver.get(f"{URL}/?appearance={appearance}")
    WebDriverWait(driver, 10).until(lambda d: d.execute_script("return document.getElementById('status').dataset.status === 'live'"))


def presentations(name, speed, ready):
    """One demo's presentations, taken once `ready()` holds; then it is stopped and cleared."""
    display("light")
    demo = islet("demo", name, "--speed", str(speed))
    try:
        WebDriverWait(driver, 60).until(lambda d: island_mode() == "compact" and ready())
        shoot(f"demo-{name}-light.png")
        display("dark")
        WebDriverWait(driver, 10).until(lambda d: island_mode() == "compact")
        shoot(f"demo-{name}-dark.png")
        driver.find_element(By.ID, "island").click()
        WebDriverWait(driver, 10).until(lambda d: d.execute_script("return document.getElementById('island').offsetWidth > 360"))
        shoot(f"demo-{name}-expanded.png")
        # Another activity, less relevant: the island shows the demo minimal, the other in its bubble.
        display("light")
        other = api("POST", "/v1/activities", {"bundleId": "com.example.demo.other", "attributesType": "Timer",
                                               "content": {"state": {"note": "another activity"}}})
        WebDriverWait(driver, 10).until(lambda d: island_mode() == "minimal")
        shoot(f"demo-{name}-minimal.png")
        api("POST", f"/v1/activities/{other['id']}/end", {"dismissalPolicy": "immediate"})
    finally:
        demo.send_signal(signal.SIGINT)
        demo.wait(timeout=30)
        for activity in api("GET", "/v1/activities?state=active,stale,ended")["activities"]:
            api("POST", f"/v1/activities/{activity['id']}/dismiss", {})


try:
    try:
        api("POST", "/v1/apps", {"bundleId": "com.example.demo.other", "name": "Other"})
    except urllib.error.HTTPError:
        pass
    presentations("bike", 3, lambda: ride_seconds() >= 20)
    presentations("ci", 2, lambda: "Building" in card_text() or "Testing" in card_text() or "%" in card_text())
    presentations("water", 5, lambda: bool(card_text()))
    presentations("delivery", 2, lambda: bool(card_text()))

    # The ride from start to summary.
    display("light")
    demo = islet("demo", "bike", "--speed", "3")
    WebDriverWait(driver, 20).until(lambda d: ride_seconds() >= 20)
    shoot("demo-bike-1-riding.png")
    display("dark")
    WebDriverWait(driver, 30).until(lambda d: ride_seconds() >= 62)
    driver.find_element(By.ID, "island").click()
    WebDriverWait(driver, 10).until(lambda d: d.execute_script("return document.getElementById('island').offsetWidth > 360"))
    shoot("demo-bike-2-expanded-dark.png")
    display("light")
    WebDriverWait(driver, 60).until(lambda d: "km/h top" in card_text())
    shoot("demo-bike-3-summary.png")
    if demo.wait(timeout=30) != 0:
        sys.exit("islet demo bike failed")
finally:
    driver.quit()
