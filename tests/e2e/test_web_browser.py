"""A person's whole visit in a real browser: headless Chromium, driven by Selenium, against a live
server, with feed checks fetching real feeds from a local server as `make run` does.

They sign in, import an OPML file, see their podcasts' titles, unsubscribe one, make an app
password and sync with it from mygpoclient (the library inside gPodder), download all their
data, and delete their account. Each step's screenshot is saved under TEST_OUTPUT_DIR/e2e/, and
axe-core checks every page for serious accessibility violations; the podcasts page is also shown
at a phone's width (390 px).
"""

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from mygpoclient import api, http
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from deletions.models import AccountDeletion
from feedchecks import services as feedchecks
from subscriptions.models import Subscription
from tests.e2e.browser import (
    DOWNLOADS,
    accessibility_violations,
    at_width,
    main_text,
    screenshot,
    sideways_scroll,
)
from tests.factories import UserFactory
from tests.feedchecks.feedserver import FeedServer
from tests.helpers import wait_until

PASSWORD = "a long and unusual passphrase 12"
SHOWS = {"/news.xml": "Morning News Café", "/tech.xml": "Tech & Tea", "/story.xml": "Story Hour"}

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("transactional_db", "plain_http_cookies")]


def channel(title: str) -> bytes:
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<rss version="2.0" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd">'
        f"<channel><title>{title.replace('&', '&amp;')}</title>"
        "<link>https://show.example/</link>"
        "<item><title>Episode 1</title></item></channel></rss>"
    ).encode()


@pytest.fixture
def shows(settings: Any) -> Iterator[FeedServer]:
    server = FeedServer().start()
    for path, title in SHOWS.items():
        server.feed(path, channel(title))
    settings.FEED_CHECKS_ENABLED = True
    settings.FEED_CHECK_THREADS = 2  # as under `make run`: off the request's path
    settings.FEED_FETCH_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    try:
        yield server
    finally:
        feedchecks.wait_for_background_checks(timeout=30)
        server.stop()


class Visit:
    """The browser on the live server: each page it opens is checked by axe-core."""

    def __init__(self, browser: WebDriver, base: str):
        self.browser = browser
        self.base = base
        self.wait = WebDriverWait(browser, 20)
        self.checked: list[str] = []

    def open(self, path: str) -> None:
        self.browser.get(self.base + path)
        self.check(path)

    def check(self, name: str) -> None:
        violations = accessibility_violations(self.browser)
        assert not violations, f"{name}: {violations}"
        self.checked.append(name)

    def click(self, css: str) -> None:
        self.browser.find_element(By.CSS_SELECTOR, css).click()

    def text(self) -> str:
        return main_text(self.browser)


def test_a_person_signs_in_imports_syncs_downloads_and_deletes_their_account(
    live_server: Any, browser: WebDriver, shows: FeedServer, tmp_path: Path, settings: Any
) -> None:
    person: Any = UserFactory(username="alice", with_password=PASSWORD)
    visit = Visit(browser, live_server.url)

    # The registration page, when open, passes the same checks.
    settings.REGISTRATION = "open"
    visit.open("/register/")
    settings.REGISTRATION = "closed"

    # Sign in.
    visit.open("/")
    assert "/login/" in browser.current_url
    screenshot(browser, "web-01-sign-in")
    browser.find_element(By.NAME, "username").send_keys("alice")
    browser.find_element(By.NAME, "password").send_keys(PASSWORD)
    visit.click("main button[type=submit]")
    visit.wait.until(expected_conditions.url_contains("/podcasts/"))
    visit.check("/podcasts/ (empty)")

    # Import an OPML file: three shows and one URL that cannot be a feed.
    opml = tmp_path / "from-my-old-app.opml"
    outlines = "".join(f'<outline text="x" xmlUrl="{shows.url(path)}"/>' for path in SHOWS)
    opml.write_text(
        f'<?xml version="1.0"?><opml version="2.0"><head/><body>{outlines}'
        '<outline text="bad" xmlUrl="mailto:nobody@example.com"/></body></opml>'
    )
    visit.open("/data/")
    browser.find_element(By.NAME, "file").send_keys(str(opml))
    visit.click("form[enctype] button[type=submit]")
    summary = visit.wait.until(
        expected_conditions.presence_of_element_located((By.CSS_SELECTOR, ".summary"))
    )
    assert "3 added, 0 already there, 1 failed" in summary.text
    assert "mailto:nobody@example.com" in summary.text
    visit.check("/data/ (imported)")
    screenshot(browser, "web-02-imported")

    # The feed checks fetch each show in the background: their titles appear.
    def titles_shown() -> bool:
        browser.get(f"{live_server.url}/podcasts/")
        return all(title in visit.text() for title in SHOWS.values())

    wait_until(titles_shown, 30, lambda: visit.text())
    visit.check("/podcasts/")
    screenshot(browser, "web-03-podcasts-with-titles")

    # At a phone's width, nothing runs off the side.
    at_width(browser, 390, scale=2)
    browser.get(f"{live_server.url}/podcasts/")
    overflow = sideways_scroll(browser)
    assert overflow <= 0, f"the page is {overflow}px wider than a phone"
    visit.check("/podcasts/ at 390 px")
    screenshot(browser, "web-04-podcasts-390px")
    at_width(browser, None)

    # Unsubscribe from one.
    row = next(
        li for li in browser.find_elements(By.CSS_SELECTOR, "li.podcast") if "Tech & Tea" in li.text
    )
    row.find_element(By.CSS_SELECTOR, "form.act button").click()
    visit.wait.until(
        expected_conditions.text_to_be_present_in_element(
            (By.CSS_SELECTOR, ".messages"), "Unsubscribed"
        )
    )
    visit.check("/podcasts/ (unsubscribed one)")
    screenshot(browser, "web-05-unsubscribed")
    tech = Subscription.objects.get(user=person, feed_url=shows.url("/tech.xml"))
    assert tech.is_subscribed is False

    # Its own page.
    visit.open(f"/podcasts/{tech.guid}/")
    assert "Tech & Tea" in visit.text()
    assert "Unsubscribed" in visit.text()

    # An app password, shown once, used from mygpoclient.
    visit.open("/account/")
    browser.find_element(By.NAME, "name").send_keys("gPodder on my laptop")
    visit.click("form[action$='/app-passwords/'] button[type=submit]")
    secret = visit.wait.until(
        expected_conditions.presence_of_element_located((By.CSS_SELECTOR, "code.password"))
    ).text
    visit.check("/account/ (app password made)")
    screenshot(browser, "web-06-app-password")
    gpodder = api.MygPodderClient("alice", secret, root_url=live_server.url)
    assert gpodder.update_device_settings("laptop", caption="Laptop", type="laptop") is True
    changes = gpodder.pull_subscriptions("laptop", since=0)
    assert sorted(changes.add) == sorted(shows.url(p) for p in ("/news.xml", "/story.xml"))
    gpodder.update_subscriptions("laptop", add_urls=["https://added-by-gpodder.example/feed"])
    visit.open("/account/")
    assert "gPodder on my laptop" in visit.text()
    assert "never" not in visit.text()  # it was used
    visit.open("/devices/")
    assert "Laptop" in visit.text()

    # Download everything.
    saved = DOWNLOADS / "podcast-sync-data.json"
    saved.unlink(missing_ok=True)
    visit.open("/data/")
    visit.click("a[href$='/data/everything.json']")
    wait_until(saved.exists, 20, "the JSON download")
    time.sleep(0.5)  # Chromium renames the file once written
    data = json.loads(saved.read_text())
    assert {s["feed_url"] for s in data["subscriptions"]} >= {
        shows.url("/tech.xml"),
        "https://added-by-gpodder.example/feed",
    }
    assert any(s["title"] == "Tech & Tea" for s in data["subscriptions"])
    assert [d["id"] for d in data["devices"]] == ["laptop"]
    screenshot(browser, "web-07-data")

    # Delete one podcast: its deletion's page follows it to the end.
    story = Subscription.objects.get(user=person, feed_url=shows.url("/story.xml"))
    visit.open(f"/podcasts/{story.guid}/")
    visit.click("a[href$='/delete/']")
    visit.wait.until(expected_conditions.url_contains("/delete/"))
    visit.check("/podcasts/…/delete/")
    visit.click("form[action$='/delete/'] button")
    visit.wait.until(expected_conditions.url_contains("/deletions/"))
    visit.wait.until(
        expected_conditions.text_to_be_present_in_element((By.ID, "status"), "Success")
    )
    visit.check("/deletions/…")
    deletion_page = browser.current_url.removeprefix(live_server.url)

    # The other pages pass axe too, and none is wider than a phone.
    pages = [
        *("/podcasts/", f"/podcasts/{tech.guid}/", deletion_page, "/devices/", "/devices/laptop/"),
        *("/history/", "/data/", "/account/", "/account/delete/"),
    ]
    for path in ("/history/", "/devices/laptop/", "/account/delete/"):
        visit.open(path)
    at_width(browser, 390)
    for path in pages:
        browser.get(live_server.url + path)
        overflow = sideways_scroll(browser)
        assert overflow <= 0, f"{path} is {overflow}px wider than a phone"
    at_width(browser, None)
    visit.open("/account/delete/")

    # Delete the account, after the password.
    browser.find_element(By.NAME, "password").send_keys(PASSWORD)
    visit.click("main form button[type=submit]")
    visit.wait.until(expected_conditions.url_contains("/account/deleted/"))
    visit.wait.until(
        expected_conditions.text_to_be_present_in_element((By.ID, "status"), "Success")
    )
    visit.check("/account/deleted/…")
    screenshot(browser, "web-08-account-deleted")
    assert not get_user_model().objects.filter(username="alice").exists()
    assert not Subscription.objects.exists()
    assert AccountDeletion.objects.get().status == AccountDeletion.Status.SUCCESS
    # Signed out everywhere: the pages and the app password.
    browser.get(f"{live_server.url}/podcasts/")
    assert "/login/" in browser.current_url
    with pytest.raises(http.Unauthorized):
        api.MygPodderClient("alice", secret, root_url=live_server.url).get_devices()
    assert len(visit.checked) >= 17
