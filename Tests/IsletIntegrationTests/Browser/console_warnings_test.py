"""The console's timeline says when an activity's state does not fit its layout (issue 27).

Started by ConsoleWarningsBrowserTests.swift with ISLET_URL and ISLET_ADMIN_KEY set, on a
loopback server whose console needs no key. A build's layout binds `state.step` and
`state.progress`; the build starts without a progress, is updated with one, then without one
again. Prints one "ok:" line per step; with SHOTS (or ISLET_SCREENSHOTS, which the Swift test
passes on) set to a directory, saves the timeline at 1280 and 390 points wide, light and dark,
there.
"""

import os

from display_test import URL, Scenario, api, browser, screenshots, text  # noqa: F401 (browser: used by Scenario)

SHOTS = os.environ.get("SHOTS") or os.environ.get("ISLET_SCREENSHOTS")

LAYOUT = {
    "lockScreen": {"type": "VStack", "alignment": "leading", "spacing": 6, "modifiers": [{"padding": 16}], "children": [
        {"type": "Text", "text": ["Build ", {"bind": "attributes.number"}], "modifiers": [{"font": "headline"}]},
        {"type": "Text", "text": {"bind": "state.step"}},
        {"type": "ProgressView", "value": {"bind": "state.progress"}},
    ]},
    "dynamicIsland": {"compactTrailing": {"type": "Text", "text": {"bind": "state.progress", "format": "percent"}}},
}


def main():
    key = api("POST", "/v1/apps", {"bundleId": "com.example.ci", "name": "Builds"})["apiKey"]
    api("PUT", "/v1/apps/com.example.ci/layouts/BuildAttributes", LAYOUT, key=key)
    build = api("POST", "/v1/activities", {"attributesType": "BuildAttributes", "attributes": {"number": 42},
                                           "content": {"state": {"step": "Checkout"}}}, key=key)["id"]
    api("POST", f"/v1/activities/{build}/update", {"content": {"state": {"step": "Test", "progress": 0.5}}}, key=key)

    with Scenario() as scenario:
        page, driver = scenario.page, scenario.driver
        driver.set_window_size(1280, 1000)

        scenario.at("an event whose state lacked a field shows what and where")
        driver.get(URL + "/console/activities/" + build)
        page.until("the card as it is now", lambda: "Test" in (text(page, "#preview") or ""))
        assert text(page, "#fit") is None, "the card now fits: no notice"
        assert text(page, "#warnings") is None, "the update fits: no warnings"
        page.js("document.querySelector('#events tr[data-type=\"started\"]').click()")
        shown = page.until("the start's warnings", lambda: text(page, "#warnings"))
        assert "state.progress is missing" in shown, shown
        assert "Lock Screen lockScreen.children[2].value" in shown, shown
        assert "compact, trailing dynamicIsland.compactTrailing.text" in shown, shown
        assert "Checkout" in text(page, "#preview")
        print("ok: the start's state, without a progress, shows what it lacks and where each region reads it")

        scenario.at("the card as it stands says so at the top, live")
        api("POST", f"/v1/activities/{build}/update", {"content": {"state": {"step": "Archive", "progress": "most"}}}, key=key)
        notice = page.until("the notice", lambda: text(page, "#fit"))
        assert "The card does not fit its layout" in notice and "state.progress is a string, not a number" in notice, notice
        screenshots(driver, SHOTS, "timeline-warnings")
        print("ok: an update whose state does not fit is said at the top of the timeline as it arrives")


if __name__ == "__main__":
    main()
