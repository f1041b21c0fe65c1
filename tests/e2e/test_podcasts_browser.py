"""Adding a podcast by its address and deleting one through its confirmation, in a real browser:
headless Chromium against a live server, whose feed checks fetch a real feed from a local server
as under `make run`.

The podcast is on the list as soon as it is added, while its feed is still being fetched; its
title then appears without a reload. The confirmation names what a deletion takes. axe-core
checks both pages at a desktop's width, at 390 px and at 320 px, where nothing may scroll
sideways; screenshots go to TEST_OUTPUT_DIR/e2e/ (add-*.png, delete-confirm-*.png).
"""

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions

from episodes.models import EpisodeAction
from feedchecks import services as feedchecks
from subscriptions.models import Subscription
from tests.e2e.browser import at_width, count, screenshot, sideways_scroll
from tests.e2e.test_web_browser import Visit as WebVisit
from tests.episodes.helpers import upload_actions
from tests.factories import UserFactory
from tests.feedchecks.feedserver import FeedServer

PASSWORD = "a long and unusual passphrase 31"
TITLE = "Café Stories: the long-running show about everything"
WIDTHS = {"desktop": 1366, "390": 390, "320": 320}

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("transactional_db", "plain_http_cookies")]


def channel(title: str) -> bytes:
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<rss version="2.0"><channel><title>{title}</title>'
        "<link>https://show.example/</link>"
        "<item><title>Episode 1</title></item></channel></rss>"
    ).encode()


class Held:
    """A feed route that answers only once released: the test sees the list before the check."""

    def __init__(self, server: FeedServer, path: str, body: bytes):
        self.release = threading.Event()
        server.feed(path, body)
        answer = server.routes[path]

        def route(handler: Any) -> None:
            self.release.wait(30)
            answer(handler)

        server.routes[path] = route


@pytest.fixture
def feeds(settings: Any) -> Iterator[tuple[FeedServer, Held]]:
    server = FeedServer().start()
    held = Held(server, "/show.xml", channel(TITLE))
    settings.FEED_CHECKS_ENABLED = True
    settings.FEED_CHECK_THREADS = 2  # as under `make run`: off the request's path
    settings.FEED_FETCH_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    try:
        yield server, held
    finally:
        held.release.set()
        feedchecks.wait_for_background_checks(timeout=30)
        server.stop()


class Visit(WebVisit):
    """The browser on the live server, each page checked at its widths too."""

    def width(self, name: str) -> None:
        at_width(self.browser, WIDTHS[name], 900)

    def check(self, name: str) -> None:
        """axe-core finds nothing serious, and nothing is wider than the window."""
        super().check(name)
        wider = sideways_scroll(self.browser)
        assert wider <= 0, f"{name} is {wider}px wider than the window"

    def at_every_width(self, path: str, shots: str | None = None) -> None:
        """The page loaded once and checked at each width: a width change lays it out as a
        load at that width does (tests/e2e/test_phone_widths.py)."""
        self.browser.get(self.base + path)
        for name in WIDTHS:
            self.width(name)
            self.check(f"{path} at {name}")
            if shots and name != "320":
                screenshot(self.browser, f"{shots}-{name}")
        self.width("desktop")

    def text(self, css: str = "main") -> str:
        return self.browser.find_element(By.CSS_SELECTOR, css).text

    def add(self, url: str) -> None:
        field = self.browser.find_element(By.NAME, "url")
        field.clear()
        field.send_keys(url)
        self.click("form.add-podcast button[type=submit]")


def test_a_person_adds_a_podcast_by_its_address_and_deletes_it_through_the_confirmation(
    live_server: Any, browser: WebDriver, feeds: tuple[FeedServer, Held]
) -> None:
    server, held = feeds
    person: Any = UserFactory(username="alice", with_password=PASSWORD)
    visit = Visit(browser, live_server.url)
    visit.width("desktop")

    visit.open("/login/")
    browser.find_element(By.NAME, "username").send_keys("alice")
    browser.find_element(By.NAME, "password").send_keys(PASSWORD)
    visit.click("main button[type=submit]")
    visit.wait.until(expected_conditions.url_contains("/podcasts/"))
    # No podcast yet: the form to add one, and no filters.
    visit.check("/podcasts/ (empty)")
    assert not count(browser, "form[role=search]")
    assert "No podcasts yet" in visit.text()

    # An address that cannot be a feed is refused in words, and nothing is added.
    visit.add("ftp://example.com/feed.xml")
    error = visit.wait.until(
        expected_conditions.presence_of_element_located((By.CSS_SELECTOR, "#id_url_error"))
    )
    assert "“ftp:” addresses cannot be feeds" in error.text
    assert browser.find_element(By.NAME, "url").get_attribute("aria-invalid") == "true"
    visit.check("/podcasts/add/ (refused)")
    screenshot(browser, "add-refused-desktop")
    assert not Subscription.objects.exists()

    # A paste longer than an address may be arrives one character over, and is named so.
    field = browser.find_element(By.NAME, "url")
    field.clear()
    field.send_keys("https://example.com/" + "a" * 2100)
    assert len(field.get_attribute("value") or "") == 2049
    visit.click("form.add-podcast button[type=submit]")
    visit.wait.until(
        expected_conditions.text_to_be_present_in_element(
            (By.CSS_SELECTOR, "#id_url_error"), "longer than 2,048 characters"
        )
    )
    assert not Subscription.objects.exists()

    # The feed's address: on the list at once, while the server still fetches it.
    url = server.url("/show.xml")
    visit.add(f"  {url} ")
    visit.wait.until(
        expected_conditions.text_to_be_present_in_element((By.CSS_SELECTOR, ".messages"), "Added")
    )
    listed = visit.text("ul.podcasts")
    assert url in listed
    assert TITLE not in listed
    visit.check("/podcasts/ (just added)")
    # The feed answers: its title appears without a reload.
    held.release.set()
    visit.wait.until(
        expected_conditions.text_to_be_present_in_element((By.CSS_SELECTOR, "ul.podcasts"), TITLE)
    )
    visit.wait.until(lambda _: not count(browser, "[data-refresh]"))
    visit.check("/podcasts/ (titled)")
    screenshot(browser, "add-desktop")
    sub = Subscription.objects.get(user=person)
    assert sub.feed_url == url

    # Another spelling of it, at a phone's width: already followed, and linked.
    visit.width("390")
    visit.open("/podcasts/")
    visit.add(url.replace("http://", "HTTP://") + "/")
    visit.wait.until(
        expected_conditions.text_to_be_present_in_element(
            (By.CSS_SELECTOR, ".messages"), "You already follow this podcast"
        )
    )
    link = browser.find_element(By.CSS_SELECTOR, ".messages a")
    assert (link.get_attribute("href") or "").endswith(f"/podcasts/{sub.guid}/")
    assert link.text == TITLE
    visit.check("/podcasts/ (already followed) at 390")
    screenshot(browser, "add-390")
    assert Subscription.objects.filter(user=person).count() == 1
    visit.width("320")
    visit.open("/podcasts/")
    visit.check("/podcasts/ at 320")
    visit.width("desktop")

    # Deleting asks first, naming the podcast and its episode actions.
    upload_actions(
        person,
        [
            {"podcast": url, "episode": f"https://show.example/{n}.mp3", "action": "download"}
            for n in range(3)
        ],
    )
    visit.open(f"/podcasts/{sub.guid}/")
    visit.click("a[href$='/delete/']")
    visit.wait.until(expected_conditions.url_contains("/delete/"))
    main = visit.text()
    assert "Delete this podcast?" in main
    assert TITLE in main
    assert "3 episode actions" in main
    assert "for good" in main
    assert "Unsubscribe instead" in main
    visit.at_every_width(f"/podcasts/{sub.guid}/delete/", shots="delete-confirm")
    visit.at_every_width("/podcasts/")

    visit.open(f"/podcasts/{sub.guid}/delete/")
    visit.click("form[action$='/delete/'] button")
    visit.wait.until(expected_conditions.url_contains("/deletions/"))
    visit.wait.until(
        expected_conditions.text_to_be_present_in_element((By.ID, "status"), "Success")
    )
    sub.refresh_from_db()
    assert sub.deleted is not None
    assert not EpisodeAction.objects.filter(user=person).exists()
    # The default list no longer shows it; the filter for deleted ones does.
    visit.open("/podcasts/")
    assert TITLE not in visit.text()
    visit.open("/podcasts/?status=deleted")
    assert TITLE in visit.text("ul.podcasts")
