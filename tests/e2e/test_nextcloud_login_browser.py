"""AntennaPod's whole Nextcloud login against a live server, the browser part in headless
Chromium (docs/nextcloud.md, "Logging in"): the app starts a flow, the phone's browser opens the
page it was given, the person signs in and allows the app, the app's polls collect the server, the
username and an app password, and the app syncs with them. axe-core checks each page."""

import time
from typing import Any

import pytest
import requests
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from accounts.models import AppPassword
from nextcloud.models import LoginFlow
from tests.e2e.browser import accessibility_violations, screenshot
from tests.factories import UserFactory

PASSWORD = "a long and unusual passphrase 14"
# What AntennaPod's HTTP client sends: "AntennaPod/" and its version.
ANTENNAPOD = "AntennaPod/3.5.0"
# AntennaPod posts both requests as forms: the start's body empty, the poll's `token=<token>`.
FORM = {"User-Agent": ANTENNAPOD, "Content-Type": "application/x-www-form-urlencoded"}

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("transactional_db", "plain_http_cookies")]


def poll(endpoint: str, token: str) -> requests.Response:
    """The app's poll."""
    return requests.post(endpoint, data=f"token={token}", headers=FORM, timeout=10)


def poll_until_allowed(endpoint: str, token: str, timeout: float = 20.0) -> dict[str, Any]:
    """Poll every 0.5 s (AntennaPod polls every second) until the flow answers 200."""
    deadline = time.monotonic() + timeout
    while True:
        response = poll(endpoint, token)
        if response.status_code == 200:
            return dict(response.json())
        assert response.status_code == 404, response.text
        assert response.json() == []
        assert time.monotonic() < deadline, "the flow was never allowed"
        time.sleep(0.5)


def check(browser: WebDriver, name: str) -> None:
    violations = accessibility_violations(browser)
    assert not violations, f"{name}: {violations}"


def test_antennapod_logs_in_through_the_browser_and_syncs(
    live_server: Any, browser: WebDriver
) -> None:
    UserFactory(username="alice", with_password=PASSWORD)
    wait = WebDriverWait(browser, 20)

    # The app starts a flow: no credentials, no body.
    response = requests.post(
        f"{live_server.url}/index.php/login/v2", data=b"", headers=FORM, timeout=10
    )
    assert response.status_code == 200, response.text
    assert response.headers["Cache-Control"] == "no-store"
    started = response.json()
    endpoint, token = started["poll"]["endpoint"], started["poll"]["token"]
    assert endpoint == f"{live_server.url}/index.php/login/v2/poll"
    assert started["login"].startswith(f"{live_server.url}/login/flow/")
    # Nobody has allowed it yet.
    waiting = poll(endpoint, token)
    assert waiting.status_code == 404
    assert waiting.json() == []

    # The phone's browser opens the page, which asks the person to sign in first.
    browser.get(started["login"])
    wait.until(expected_conditions.url_contains("/login/?next="))
    check(browser, "sign-in for the app")
    browser.find_element(By.NAME, "username").send_keys("alice")
    browser.find_element(By.NAME, "password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "main button[type=submit]").click()
    wait.until(expected_conditions.url_to_be(started["login"]))
    main = browser.find_element(By.TAG_NAME, "main")
    assert f"Allow {ANTENNAPOD} to sync with your account?" in main.text
    assert "alice" in main.text
    check(browser, "the app's request")
    screenshot(browser, "nextcloud-01-allow")

    browser.find_element(By.CSS_SELECTOR, "button[value=allow]").click()
    wait.until(expected_conditions.text_to_be_present_in_element((By.TAG_NAME, "h1"), "sync now"))
    check(browser, "the app allowed")
    screenshot(browser, "nextcloud-02-allowed")

    # The app's polls collect its credentials, once.
    found = poll_until_allowed(endpoint, token)
    assert found["server"] == live_server.url
    assert found["loginName"] == "alice"
    assert AppPassword.objects.get().name == ANTENNAPOD
    assert not LoginFlow.objects.exists()
    again = poll(endpoint, token)
    assert again.status_code == 404
    assert again.json() == []

    # From now on the app sends them with Basic on every request, to the server it was given.
    auth = (found["loginName"], found["appPassword"])
    synced = requests.get(
        f"{found['server']}/index.php/apps/gpoddersync/subscriptions",
        params={"since": 0},
        auth=auth,
        headers={"User-Agent": ANTENNAPOD},
        timeout=10,
    )
    assert synced.status_code == 200, synced.text
    assert synced.json()["add"] == []
    devices = requests.get(f"{found['server']}/api/2/devices/alice.json", auth=auth, timeout=10)
    assert devices.status_code == 200, devices.text


def test_a_denied_app_gets_nothing(live_server: Any, browser: WebDriver) -> None:
    user: Any = UserFactory(username="alice", with_password=PASSWORD)
    started = requests.post(
        f"{live_server.url}/login/v2", headers={"User-Agent": ANTENNAPOD}, timeout=10
    ).json()
    browser.get(started["login"])
    browser.find_element(By.NAME, "username").send_keys("alice")
    browser.find_element(By.NAME, "password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "main button[type=submit]").click()
    WebDriverWait(browser, 20).until(expected_conditions.url_to_be(started["login"]))
    browser.find_element(By.CSS_SELECTOR, "button[value=deny]").click()
    WebDriverWait(browser, 20).until(
        expected_conditions.text_to_be_present_in_element((By.TAG_NAME, "h1"), "was denied")
    )
    check(browser, "the app denied")
    denied = poll(started["poll"]["endpoint"], started["poll"]["token"])
    assert denied.status_code == 404
    assert denied.json() == []
    assert not AppPassword.objects.filter(user=user).exists()
