"""Screenshots of the web display with the three example scenarios live on it.

Run by screenshots.sh against a server of its own (an empty data directory):
    python3 display_screenshots.py URL ADMIN_KEY OUTPUT_DIRECTORY
Registers the example layouts, starts one activity per scenario with dates around now, opens the
display in headless Chromium (Selenium, with Debian's chromium-driver) and saves the phone in
light and dark appearance, and with the island expanded.
"""

import json
import os
import sys
import time
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

URL, ADMIN, OUT = sys.argv[1:4]
HERE = os.path.dirname(os.path.abspath(__file__))
SWIFT_EPOCH = 978307200  # 2001-01-01, where Swift's Date counts from


def api(method, path, body, key=ADMIN):
    request = urllib.request.Request(URL + path, method=method, data=json.dumps(body).encode())
    request.add_header("Authorization", "Bearer " + key)
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read() or b"null")


def scenario(bundle_id, name, folder, type_name, attributes, state, relevance):
    key = api("POST", "/v1/apps", {"bundleId": bundle_id, "name": name})["apiKey"]
    with open(os.path.join(HERE, folder, "layout.json")) as file:
        api("PUT", f"/v1/apps/{bundle_id}/layouts/{type_name}", json.load(file), key=key)
    api("POST", "/v1/activities", {"attributesType": type_name, "attributes": attributes,
                                   "content": {"state": state, "relevanceScore": relevance}}, key=key)


now = time.time()
with open(os.path.join(HERE, "bike-computer", "attributes.json")) as file:
    bike = json.load(file)
bike["startDate"] = now - SWIFT_EPOCH - 23 * 60 - 41
scenario("com.example.bike", "Bike Computer", "bike-computer", "BikeAttributes", bike,
         {"speed": 27.4, "distance": 12.4, "averageSpeed": 21.6}, 50)
scenario("com.example.ci", "AppCircle", "ci-build", "StatusAttribute", {"buildId": "123456789"},
         {"status": "inProgress", "estimatedCompletionTime": now - SWIFT_EPOCH + 252}, 30)
scenario("com.example.water", "Scripting", "water-countdown", "MyLiveActivity", {},
         {"mins": 4, "startDate": int((now - 72) * 1000), "endDate": int((now + 228) * 1000)}, 10)

options = Options()
for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=900,1100",
                 "--force-device-scale-factor=2"]:
    options.add_argument(argument)
driver = webdriver.Chrome(service=Service(os.environ.get("ISLET_CHROMEDRIVER", "/usr/bin/chromedriver")), options=options)
try:
    for appearance in ["light", "dark"]:
        driver.get(f"{URL}/?appearance={appearance}")
        WebDriverWait(driver, 10).until(lambda d: d.execute_script(
            "return document.querySelectorAll('#list .islet-item').length === 3 && document.getElementById('island').dataset.mode === 'minimal'"))
        time.sleep(1.2)  # the entrance animations
        path = os.path.join(OUT, f"display-{appearance}.png")
        driver.find_element(By.ID, "phone").screenshot(path)
        print(path)
    driver.find_element(By.ID, "island").click()
    WebDriverWait(driver, 10).until(lambda d: d.execute_script("return document.getElementById('island').offsetWidth > 360"))
    time.sleep(0.8)
    path = os.path.join(OUT, "display-expanded-dark.png")
    driver.find_element(By.ID, "phone").screenshot(path)
    print(path)
finally:
    driver.quit()
