"""The connect page's steps followed end to end in headless Chromium against a live server, with
only what the page shows (docs/web.md, "Connecting an app"): the address and the username are
read from the rendered page, the app password from the answer to the app's button, and each app
builds its addresses from them as its own code does. gPodder is mygpoclient, the library inside
it; AntennaPod's Nextcloud login is replayed as tests/e2e/test_nextcloud_login_browser.py does,
the sign-in page naming it on the way. axe-core checks every page, at a laptop's width, at 390
px and at 320 px, where nothing may scroll sideways.
"""

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from mygpoclient import api
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from accounts.models import AppPassword
from gpodder.models import Device
from tests.e2e.browser import (
    accessibility_violations,
    at_width,
    main_text,
    sideways_scroll,
    whole_page_screenshot,
)
from tests.factories import UserFactory
from tests.servers import ROOT, free_port

PASSWORD = "a long and unusual passphrase 31"
ANTENNAPOD = "AntennaPod/3.5.0"
FORM = {"User-Agent": ANTENNAPOD, "Content-Type": "application/x-www-form-urlencoded"}
WIDTHS = (1366, 390, 320)

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("transactional_db", "plain_http_cookies")]


def antennapod_url(address: str, path: str) -> str:
    """The URL AntennaPod makes of what is typed into its Server address and a path (its
    HostnameParser): https unless the address says http:// or names port 80."""
    found = re.fullmatch(r"(?:(https?)://)?([^:/]+)(?::(\d+))?(.+)?", address)
    assert found, address
    scheme, host, port_text, folder = found.groups()
    port = int(port_text) if port_text else -1
    if scheme is None:
        scheme = "http" if port == 80 else "https"
    if port == -1:
        port = 443 if scheme == "https" else 80
    return f"{scheme}://{host}:{port}{(folder or '').rstrip('/')}{path}"


class Visit:
    def __init__(self, browser: WebDriver, base: str) -> None:
        self.browser = browser
        self.base = base
        self.wait = WebDriverWait(browser, 20)

    def check(self, name: str) -> None:
        violations = accessibility_violations(self.browser)
        assert not violations, f"{name}: {violations}"
        wider = sideways_scroll(self.browser)
        assert wider <= 0, f"{name} scrolls sideways by {wider}px"
        cut = self.browser.execute_script(
            "return [...document.querySelectorAll('main button, main input, main a')]"
            ".filter(e => e.offsetParent && e.getBoundingClientRect().right > window.innerWidth)"
            ".map(e => e.textContent.trim())"
        )
        assert not cut, f"{name}: cut off at the edge: {cut}"

    def shown(self, element_id: str) -> str:
        """The text the page shows in the element of that id: what the person reads and types."""
        return str(
            self.wait.until(
                expected_conditions.visibility_of_element_located((By.ID, element_id))
            ).text
        )

    def press(self, app: str) -> str:
        """Press the app's button; the app password the answer shows."""
        self.browser.find_element(By.CSS_SELECTOR, f"#{app}-password button[type=submit]").click()
        return self.shown(f"{app}-secret")

    def sign_in(self, username: str) -> None:
        self.browser.find_element(By.NAME, "username").send_keys(username)
        self.browser.find_element(By.NAME, "password").send_keys(PASSWORD)
        self.browser.find_element(By.CSS_SELECTOR, "main button[type=submit]").click()


def poll_until_allowed(endpoint: str, token: str, timeout: float = 20.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        response = requests.post(endpoint, data=f"token={token}", headers=FORM, timeout=10)
        if response.status_code == 200:
            return dict(response.json())
        assert response.status_code == 404, response.text
        assert time.monotonic() < deadline, "the flow was never allowed"
        time.sleep(0.5)


def test_every_apps_steps_work_with_what_the_page_shows(
    live_server: Any, browser: WebDriver, settings: Any
) -> None:
    # The live server listens on loopback alone, where the page opened through localhost would
    # give the home network's address instead (test_the_home_server_opened_through_localhost...).
    settings.PUBLIC_URL = live_server.url
    UserFactory(username="alice", with_password=PASSWORD)
    visit = Visit(browser, live_server.url)
    at_width(browser, 1366)

    # Signed out, the page asks to sign in first, and comes back.
    browser.get(f"{live_server.url}/connect/")
    visit.wait.until(expected_conditions.url_contains("/login/?next=/connect/"))
    visit.sign_in("alice")
    visit.wait.until(expected_conditions.url_to_be(f"{live_server.url}/connect/"))
    visit.check("/connect/")
    whole_page_screenshot(browser, "connect-desktop")
    username = visit.shown("username")
    assert username == "alice"
    # The Copy buttons (the script shows them) copy what the page shows.
    browser.execute_cdp_cmd(
        "Browser.grantPermissions",
        {
            "origin": live_server.url,
            "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"],
        },
    )
    browser.find_element(By.CSS_SELECTOR, "button[data-copy=server-address]").click()
    visit.wait.until(
        expected_conditions.text_to_be_present_in_element((By.ID, "copied"), "Copied: ")
    )
    copied = browser.execute_async_script(
        "navigator.clipboard.readText().then(arguments[0], () => arguments[0](null))"
    )
    assert copied == visit.shown("server-address") == live_server.url

    # gPodder: its Server, Username and Password, as it hands them to mygpoclient.
    server = visit.shown("gpodder-address")
    secret = visit.press("gpodder")
    visit.check("/connect/ (gPodder's app password)")
    gpodder = api.MygPodderClient(username, secret, server)
    assert gpodder.update_device_settings("laptop-3f2a", caption="My laptop", type="laptop")
    pulled = gpodder.pull_subscriptions("laptop-3f2a", since=0)
    assert pulled.add == []
    gpodder.update_subscriptions("laptop-3f2a", add_urls=["https://gpodder.example/feed.xml"])

    # AntennaPod's gpodder.net option: its Server address, Username and Password; it logs in,
    # then lists the devices to pick from.
    address = visit.shown("antennapod-gpodder-address")
    secret = visit.press("antennapod")
    antennapod = requests.Session()
    antennapod.headers["User-Agent"] = ANTENNAPOD
    login = antennapod.post(
        antennapod_url(address, f"/api/2/auth/{username}/login.json"),
        auth=(username, secret),
        timeout=10,
    )
    assert login.status_code == 200, login.text
    devices = antennapod.get(antennapod_url(address, f"/api/2/devices/{username}.json"), timeout=10)
    assert [device["caption"] for device in devices.json()] == ["My laptop"]

    # Kasts, both providers: its Hostname is the base of every address it asks for.
    secret = visit.press("kasts")
    kasts = (username, secret)
    hostname = visit.shown("kasts-gpodder-address")
    assert requests.post(f"{hostname}/api/2/auth/{username}/login.json", auth=kasts, timeout=10).ok
    hostname = visit.shown("kasts-nextcloud-address")
    changes = requests.get(
        f"{hostname}/index.php/apps/gpoddersync/subscriptions?since=0", auth=kasts, timeout=10
    )
    assert changes.json()["add"] == ["https://gpodder.example/feed.xml"]

    # AntennaPod's Nextcloud option: the address alone; the phone's browser (signed out here)
    # opens the page it is given, whose sign-in names the app.
    address = visit.shown("antennapod-nextcloud-address")
    started = requests.post(
        antennapod_url(address, "/index.php/login/v2"), data=b"", headers=FORM, timeout=10
    ).json()
    browser.delete_all_cookies()
    browser.get(started["login"])
    visit.wait.until(expected_conditions.url_contains("/login/?next="))
    main = main_text(browser)
    assert f"{ANTENNAPOD} asks to sync with your account." in main
    for width in WIDTHS:
        at_width(browser, width)
        visit.check(f"the sign-in naming the app at {width}px")
    whole_page_screenshot(browser, "connect-sign-in-names-the-app-320")
    at_width(browser, 1366)
    visit.sign_in("alice")
    visit.wait.until(expected_conditions.url_to_be(started["login"]))
    browser.find_element(By.CSS_SELECTOR, "button[value=allow]").click()
    found = poll_until_allowed(started["poll"]["endpoint"], started["poll"]["token"])
    assert found["loginName"] == username
    synced = requests.post(
        antennapod_url(found["server"], "/index.php/apps/gpoddersync/subscription_change/create"),
        json={"add": ["https://antennapod.example/feed.xml"], "remove": []},
        auth=(found["loginName"], found["appPassword"]),
        headers={"User-Agent": ANTENNAPOD},
        timeout=10,
    )
    assert synced.status_code == 200, synced.text

    # Every app shares one list, and each has its own app password.
    assert sorted(gpodder.pull_subscriptions("laptop-3f2a", since=0).add) == [
        "https://antennapod.example/feed.xml",
        "https://gpodder.example/feed.xml",
    ]
    assert sorted(AppPassword.objects.values_list("name", flat=True)) == sorted(
        ["gPodder", "AntennaPod", "Kasts", ANTENNAPOD]
    )
    assert Device.objects.filter(device_id="laptop-3f2a").exists()
    browser.get(f"{live_server.url}/devices/")
    assert "My laptop" in main_text(browser)


def test_the_page_at_a_phones_width_and_past_the_limit(
    live_server: Any, browser: WebDriver, settings: Any
) -> None:
    person: Any = UserFactory(
        username="Zoë_Øvergaard-Sørensen.podcasts@field-notes", with_password=PASSWORD
    )
    visit = Visit(browser, live_server.url)
    browser.get(f"{live_server.url}/login/?next=/connect/")
    visit.sign_in(person.username)
    visit.wait.until(expected_conditions.url_to_be(f"{live_server.url}/connect/"))
    for width in WIDTHS:
        at_width(browser, width)
        browser.get(f"{live_server.url}/connect/")
        visit.check(f"/connect/ at {width}px")
        assert visit.shown("username") == person.username
        secret = visit.press("kasts")
        visit.check(f"/connect/ with an app password at {width}px")
        assert browser.find_element(By.ID, "kasts-secret").is_displayed()
        assert secret
        if width == 390:
            whole_page_screenshot(browser, "connect-390")

    # No room for another: the answer says so in words, where the button was pressed.
    settings.MAX_APP_PASSWORDS = AppPassword.objects.filter(user=person).count()
    at_width(browser, 320)
    browser.get(f"{live_server.url}/connect/")
    browser.find_element(By.CSS_SELECTOR, "#gpodder-password button[type=submit]").click()
    alert = visit.wait.until(
        expected_conditions.visibility_of_element_located(
            (By.CSS_SELECTOR, "#gpodder-password [role=alert]")
        )
    )
    assert f"You have {settings.MAX_APP_PASSWORDS} app passwords" in alert.text
    assert "Your account page lists them." in alert.text
    visit.check("/connect/ past MAX_APP_PASSWORDS at 320px")
    whole_page_screenshot(browser, "connect-limit-320")
    assert AppPassword.objects.filter(user=person).count() == settings.MAX_APP_PASSWORDS
    assert not AppPassword.objects.filter(name="gPodder").exists()


@pytest.fixture
def home_server(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """`manage.py serve` as `make run` starts it, on every interface: its localhost address and
    what it printed."""
    port = free_port()
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--port", str(port)],
            cwd=ROOT,
            env={
                "PATH": os.environ["PATH"],
                "DATA_DIR": str(tmp_path / "data"),
                "STATIC_ROOT": str(tmp_path / "static"),  # not the checkout's, which others serve
            },
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://localhost:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            with contextlib.suppress(requests.RequestException):
                if requests.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.3)
        yield url, log.read_text()
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)


def test_the_home_server_opened_through_localhost_gives_an_address_the_phone_reaches(
    home_server: tuple[str, str], browser: WebDriver
) -> None:
    """A person at the box opens what the start printed for this machine and presses "Connect an
    app": the address to type is the first the start named for apps, one a phone reaches, not
    `localhost` (a phone's own)."""
    url, printed = home_server
    first = re.search(r"server's address is one of these:\n\s+(http://\S+)", printed)
    assert first, printed
    found = re.search(r"Sign in as 'admin' with the password: (\S+)", printed)
    assert found, printed
    visit = Visit(browser, url)
    at_width(browser, 1366)
    browser.get(f"{url}/login/?next=/connect/")
    browser.find_element(By.NAME, "username").send_keys("admin")
    browser.find_element(By.NAME, "password").send_keys(found.group(1))
    browser.find_element(By.CSS_SELECTOR, "main button[type=submit]").click()
    visit.wait.until(expected_conditions.url_to_be(f"{url}/connect/"))
    address = visit.shown("server-address")
    assert address == first.group(1) != url
    assert "localhost" not in address
    why = visit.shown("address-why")
    assert why.startswith("You opened this page through localhost, which on a phone means")
    # From elsewhere on the network the address answers (this machine's own, over its LAN side).
    assert requests.get(f"{address}/health", timeout=5).status_code == 200
    visit.check("/connect/ through localhost")
    whole_page_screenshot(browser, "connect-localhost-desktop")
    at_width(browser, 390)
    browser.get(f"{url}/connect/")
    visit.check("/connect/ through localhost at 390px")
    assert visit.shown("server-address") == address
    whole_page_screenshot(browser, "connect-localhost-390")
