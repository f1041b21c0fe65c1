"""A device's page in a real browser, after real syncs: gPodder's library (mygpoclient) syncs a
laptop over the gpodder.net API, one upload of which is refused, and AntennaPod's requests sync
a phone over the Nextcloud API with an app password; the person then reads what each device
last did, removes one and revokes the other's app password, each once asked
(docs/web.md, "Devices").

Every page passes axe-core at a laptop's width and at 390 and 320 px, without scrolling sideways;
the screenshots are saved under TEST_OUTPUT_DIR/e2e/ (devices-desktop.png,
device-diagnostics-desktop.png, device-diagnostics-390.png, and the confirmations')."""

import base64
import http.client
import json
from typing import Any
from urllib.parse import urlsplit

import pytest
from mygpoclient import api
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from accounts.models import AppPassword
from accounts.services import app_password_create
from gpodder.models import Device
from nextcloud.services import app_device_ids, device_id_for
from tests.e2e.browser import (
    accessibility_violations,
    at_width,
    main_text,
    sideways_scroll,
    whole_page_screenshot,
)
from tests.factories import UserFactory
from tests.helpers import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("transactional_db", "plain_http_cookies")]

PASSWORD = "a long and unusual passphrase 31"
FEEDS = ["https://podnews.example/rss", "https://talk.example/feed.xml"]
DESKTOP, PHONES = 1366, (390, 320)
# A long name, one long word of it, on a phone's narrow screen.
LAPTOP = "Zoë's Arbeitszimmerlautsprecheranlagensteuerungslaptop 💻"


@pytest.fixture(autouse=True)
def _forget_app_devices() -> Any:
    app_device_ids.clear()
    yield
    app_device_ids.clear()


def basic(secret: str) -> str:
    return "Basic " + base64.b64encode(f"alice:{secret}".encode()).decode()


def call(base: str, method: str, path: str, body: Any, *, secret: str, agent: str) -> int:
    """One request as an app sends it, with its own User-Agent."""
    parts = urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
    headers = {"Authorization": basic(secret), "User-Agent": agent}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    conn.request(method, path, data, headers)
    status = conn.getresponse().status
    conn.close()
    return status


def synced(base: str, nextcloud_secret: str) -> None:
    """The laptop: gPodder's library, as gPodder syncs; one upload it sends with a time it
    cannot have written, refused. The phone: AntennaPod's Nextcloud sync."""
    gpodder = api.MygPodderClient("alice", PASSWORD, root_url=base)
    assert gpodder.update_device_settings("laptop", caption=LAPTOP, type="laptop")
    gpodder.update_subscriptions("laptop", add_urls=[*FEEDS, "ftp://files.example/x"])
    gpodder.pull_subscriptions("laptop", since=0)
    plays = [
        api.EpisodeAction(FEEDS[0], f"https://cdn.example/{n}.mp3", "play", device="laptop",
                          timestamp="2026-11-20T08:00:00", started=0, position=60 * n, total=3600)
        for n in range(1, 4)
    ]  # fmt: skip
    gpodder.upload_episode_actions(plays)
    gpodder.download_episode_actions(since=0)
    refused = [
        {"podcast": FEEDS[0], "episode": "https://cdn.example/4.mp3", "action": "play",
         "device": "laptop", "timestamp": "yesterday", "position": 10}
    ]  # fmt: skip
    agent = "mygpoclient/1.10 (+https://gpodder.org/mygpoclient/)"
    assert call(base, "POST", "/api/2/episodes/alice.json", refused,
                secret=PASSWORD, agent=agent) == 400  # fmt: skip

    phone = {"secret": nextcloud_secret, "agent": "AntennaPod/3.8.0"}
    app = "/index.php/apps/gpoddersync"
    assert call(base, "GET", f"{app}/subscriptions?since=0", None, **phone) == 200
    assert call(base, "GET", f"{app}/episode_action?since=0", None, **phone) == 200


# The buttons and fields that reach past either edge of the window.
CUT = """
return [...document.querySelectorAll("input:not([type=hidden]), select, button, a.button")]
  .filter(el => {
    const box = el.getBoundingClientRect();
    return box.width > 0 && (box.right > window.innerWidth + 0.5 || box.left < -0.5);
  })
  .map(el => (el.innerText || el.name || "").trim().slice(0, 40));
"""


def checked(browser: WebDriver, base: str, path: str, shots: str | None = None) -> list[str]:
    """The page at each width: what axe-core finds, and any sideways scroll; its screenshots
    at 1366 and 390 px as `<shots>-desktop.png` and `<shots>-390.png`."""
    found = []
    for width in (DESKTOP, *PHONES):
        at_width(browser, width, 900)
        browser.get(base + path)
        wider = sideways_scroll(browser)
        if wider > 0:
            found.append(f"{path} at {width}px: scrolls sideways by {wider}px")
        found += [f"{path} at {width}px: cut off: {cut}" for cut in browser.execute_script(CUT)]
        found += [f"{path} at {width}px: {v}" for v in accessibility_violations(browser)]
        if shots and width in (DESKTOP, 390):
            whole_page_screenshot(browser, f"{shots}-{'desktop' if width == DESKTOP else width}")
    at_width(browser, None)
    return found


def test_a_person_reads_what_each_device_last_did_then_removes_and_revokes(
    live_server: Any, browser: WebDriver
) -> None:
    person: Any = UserFactory(username="alice", with_password=PASSWORD)
    made, secret = app_password_create(user=person, name="AntennaPod on Zoë's phone")
    synced(live_server.url, secret)
    phone = device_id_for("AntennaPod on Zoë's phone")

    browser.get(f"{live_server.url}/login/")
    browser.find_element(By.NAME, "username").send_keys("alice")
    browser.find_element(By.NAME, "password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "main button[type=submit]").click()
    wait_until(lambda: "/podcasts/" in browser.current_url, 20, "the signed-in page")

    found = checked(browser, live_server.url, "/devices/", "devices")
    listing = main_text(browser)
    assert "mygpoclient 1.10, gpodder.net API" in listing
    assert "AntennaPod 3.8.0, Nextcloud API" in listing

    found += checked(browser, live_server.url, "/devices/laptop/", "device-diagnostics")
    laptop = main_text(browser)
    assert "mygpoclient 1.10" in laptop
    assert "gpodder.net API" in laptop
    assert "3 episode actions" in laptop  # its last download
    assert "2 subscription changes (2 subscribed, 0 unsubscribed)" in laptop
    assert "1 URL refused: not usable as a feed's address, like ftp://files.example/x" in laptop
    assert "1 episode action refused: action 0: timestamp must be an ISO 8601 time" in laptop
    found += checked(browser, live_server.url, f"/devices/{phone}/")
    assert "Nextcloud API" in main_text(browser)

    # Removing the laptop asks first, from its page.
    found += checked(browser, live_server.url, "/devices/laptop/remove/", "device-remove")
    browser.get(f"{live_server.url}/devices/laptop/")
    browser.find_element(By.CSS_SELECTOR, "a[href$='/remove/']").click()
    wait_until(lambda: "Remove this device?" in main_text(browser), 20, "the confirmation")
    assert "keeps its 3 episode actions" in main_text(browser)
    browser.find_element(By.CSS_SELECTOR, "main form button.danger").click()
    wait_until(lambda: "Device laptop removed" in main_text(browser), 20, "the removal")
    assert not Device.objects.filter(device_id="laptop").exists()
    # Sent again (the back button, another tab): told in words.
    found += checked(browser, live_server.url, "/devices/laptop/remove/", "device-gone")
    assert "is not among your devices: it was removed already" in main_text(browser)

    # Revoking the phone's app password, which it used, asks first too.
    revoke = f"/account/app-passwords/{made.pk}/revoke/"
    found += checked(browser, live_server.url, revoke, "app-password-revoke")
    browser.get(f"{live_server.url}/account/")
    browser.find_element(By.CSS_SELECTOR, f"a[href='{revoke}']").click()
    wait_until(lambda: "Revoke this app password?" in main_text(browser), 20, "the question")
    browser.find_element(By.CSS_SELECTOR, "main form button.danger").click()
    wait_until(lambda: "is revoked" in main_text(browser), 20, "the revocation")
    assert not AppPassword.objects.filter(pk=made.pk).exists()
    found += checked(browser, live_server.url, revoke)
    assert "it was revoked already" in main_text(browser)

    assert not found, "\n".join(found)
