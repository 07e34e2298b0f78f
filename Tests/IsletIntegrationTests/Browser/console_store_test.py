"""The console's overview says what a failover of the store's database keeps (issue 46).

Started by FailoverTests.swift with ISLET_URL set, on a loopback node (its console needs no key)
on PostgreSQL: a primary and its synchronous standby in one address. The overview's Store panel
says synchronous; the script then writes READY_FILE and keeps the page open while the test
crashes the primary and promotes the standby: the panel, read again by the page itself, says
asynchronous (the promoted standby has no standby of its own). Prints one "ok:" line per step;
with SHOTS (or ISLET_SCREENSHOTS) set to a directory, saves the overview before and after there.
"""

import os

from selenium.webdriver.support.ui import WebDriverWait

from display_test import URL, Scenario, screenshots

SHOTS = os.environ.get("SHOTS") or os.environ.get("ISLET_SCREENSHOTS")


def store(page, name):
    return page.js("const n = document.querySelector('#store [data-store=\"' + arguments[0] + '\"]'); return n ? n.innerText : null;", name)


def main():
    with Scenario() as scenario:
        page, driver = scenario.page, scenario.driver
        driver.set_window_size(1280, 1000)

        scenario.at("the overview says the commits wait for the standby")
        driver.get(URL + "/console")
        page.until("the store panel", lambda: store(page, "replication") == "synchronous")
        assert store(page, "kind") == "PostgreSQL", store(page, "kind")
        assert "127.0.0.1" in store(page, "location") and "target_session_attrs=read-write" in store(page, "location"), store(page, "location")
        assert "keeps every acknowledged change" in store(page, "failover"), store(page, "failover")
        status = page.js("return document.querySelector('#store [data-store=\"replication\"]').dataset.status")
        assert status == "ok", status
        screenshots(driver, SHOTS, "overview-store-synchronous")
        print("ok: the overview says PostgreSQL, synchronous: a failover keeps every acknowledged change")

        scenario.at("after the failover, the same page says a failover may lose the last changes")
        with open(os.environ["READY_FILE"], "w") as ready:
            ready.write("synchronous shown\n")
        # The crash, the promotion and the node's move, then the page's next reading (every 5 s).
        WebDriverWait(driver, 60, poll_frequency=0.1).until(lambda _: store(page, "replication") == "asynchronous")
        assert "may lose the last acknowledged changes" in store(page, "failover"), store(page, "failover")
        status = page.js("return document.querySelector('#store [data-store=\"replication\"]').dataset.status")
        assert status == "degraded", status
        screenshots(driver, SHOTS, "overview-store-asynchronous")
        print("ok: after the primary crashed and the standby was promoted, the open page says asynchronous")


if __name__ == "__main__":
    main()
