"""The console's Installations page (issue 59): the phones an app's builds registered with a
client key, and what each reported, with no token shown whole to the keyless console.

Started by ConsoleSendsBrowserTests.swift with ISLET_URL and ISLET_ADMIN_KEY set, on a loopback
server whose console needs no key. An iPhone's installation, signed in as a user, reports a
push-to-start token; an Android phone's reports its FCM token. Prints one "ok:" line per step;
with SHOTS (or ISLET_SCREENSHOTS) set to a directory, saves the page at 1280 and 390 points
wide, light and dark, there.
"""

import hashlib
import hmac
import os

from display_test import URL, Scenario, api, browser, fits_a_phone, screenshots, text  # noqa: F401 (browser: used by Scenario)

SHOTS = os.environ.get("SHOTS") or os.environ.get("ISLET_SCREENSHOTS")
APP = "com.example.rides"


def main():
    key = api("POST", "/v1/apps", {"bundleId": APP, "name": "Rides"})["apiKey"]
    client_key = api("POST", f"/v1/apps/{APP}/client-keys", {"name": "the iOS app"}, key=key)["key"]
    secret = api("POST", f"/v1/apps/{APP}/user-verification-secret", {}, key=key)["secret"]
    signature = hmac.new(secret.encode(), b"rider-7", hashlib.sha256).hexdigest()
    iphone = api("POST", "/v1/installations", {"bundleId": APP, "platform": "ios", "environment": "production",
                                               "userId": "rider-7", "userIdSignature": signature}, key=client_key)
    token = "5a1b" * 16
    api("PUT", f"/v1/devices/{iphone['installation']['id']}/push-to-start-tokens/RideAttributes",
        {"token": token, "environment": "production"}, key=iphone["credential"])
    pixel = api("POST", "/v1/installations", {"bundleId": APP, "platform": "android"}, key=client_key)
    fcm = "fcm-registration-token-of-the-pixel-" + "x" * 40
    api("PUT", f"/v1/devices/{pixel['installation']['id']}/fcm-token", {"token": fcm}, key=pixel["credential"])

    with Scenario() as scenario:
        page, driver = scenario.page, scenario.driver
        driver.set_window_size(1280, 1000)

        scenario.at("each installation and what it reported")
        driver.get(URL + "/console/installations")
        page.until("two installations", lambda: page.js("return document.querySelectorAll('#installations [data-installation]').length") == 2)
        order = page.js("return [...document.querySelectorAll('#installations [data-installation]')].map(n => n.dataset.installation)")
        assert order == [pixel["installation"]["id"], iphone["installation"]["id"]], order
        shown = text(page, f'[data-installation="{iphone["installation"]["id"]}"]')
        assert "rider-7" in shown and "push-to-start RideAttributes" in shown and "ios (production)" in shown, shown
        assert token[:8] + "…" in shown and token not in shown, shown
        print("ok: the iPhone's installation, signed in as rider-7, with its push-to-start token cut to 8 characters")
        shown = text(page, f'[data-installation="{pixel["installation"]["id"]}"]')
        assert "FCM token" in shown and "android" in shown and fcm not in shown and fcm[:8] + "…" in shown, shown
        print("ok: the Android phone's installation with its FCM token, cut")
        page_text = page.js("return document.body.innerText")
        assert token not in page_text and fcm not in page_text
        screenshots(driver, SHOTS, "installations")

        scenario.at("a phone's width")
        fits_a_phone(page, driver)


if __name__ == "__main__":
    main()
