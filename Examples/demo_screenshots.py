"""Screenshots of `islet demo bike` on the web display, from its start to its summary.

Run by demo-screenshots.sh against a server of its own:
    python3 demo_screenshots.py URL DATA_DIRECTORY OUTPUT_DIRECTORY ISLET...
Starts `islet demo bike --speed 3` (the two-minute ride in 40 seconds), opens the display in
headless Chromium (Selenium, with Debian's chromium-driver) and saves the phone while the ride
starts, in the middle with the island expanded (dark), and at the end with the summary.
"""

import os
import re
import subprocess
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

URL, DATA, OUT = sys.argv[1:4]
ISLET = sys.argv[4:]

options = Options()
for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=900,1100",
                 "--force-device-scale-factor=2",
                 "--force-prefers-reduced-motion"]:  # transitions settle at once: sharp pictures
    options.add_argument(argument)
driver = webdriver.Chrome(service=Service(os.environ.get("ISLET_CHROMEDRIVER", "/usr/bin/chromedriver")), options=options)


def card_text():
    return driver.execute_script("const c = document.querySelector('#list .islet-item'); return c ? c.innerText : ''")


def ride_seconds():
    """The ride's time on the card (`m:ss`), in seconds."""
    found = re.search(r"\b(\d+):(\d\d)\b", card_text())
    return int(found.group(1)) * 60 + int(found.group(2)) if found else -1


def shoot(name):
    time.sleep(0.9)  # the content transitions
    path = os.path.join(OUT, name)
    driver.find_element(By.ID, "phone").screenshot(path)
    print(path, flush=True)


demo = None
try:
    driver.get(f"{URL}/?appearance=light")
    WebDriverWait(driver, 10).until(lambda d: d.execute_script("return document.getElementById('status').dataset.status === 'live'"))
    demo = subprocess.Popen(ISLET + ["demo", "bike", "--speed", "3", "--server", URL, "--data", DATA])
    WebDriverWait(driver, 20).until(lambda d: ride_seconds() >= 20)
    shoot("demo-bike-1-riding.png")

    driver.get(f"{URL}/?appearance=dark")
    WebDriverWait(driver, 30).until(lambda d: ride_seconds() >= 62)
    driver.find_element(By.ID, "island").click()
    WebDriverWait(driver, 10).until(lambda d: d.execute_script("return document.getElementById('island').offsetWidth > 360"))
    shoot("demo-bike-2-expanded-dark.png")

    driver.get(f"{URL}/?appearance=light")
    WebDriverWait(driver, 60).until(lambda d: "km/h top" in card_text())
    shoot("demo-bike-3-summary.png")
    if demo.wait(timeout=30) != 0:
        sys.exit("islet demo bike failed")
finally:
    if demo and demo.poll() is None:
        demo.kill()
    driver.quit()
