"""A feed that can't be fetched, in a real browser (docs/web.md, "When a feed can't be fetched"):
headless Chromium against a live server, with feed checks fetching from a local feed server on
threads of the web process, as under `make run`.

The list and the podcast's page say why in words, when it was tried and when it will be again;
Check now fetches it at once. Each page passes axe-core at a laptop's width and at 390 and 320
px, where nothing scrolls sideways. Screenshots: `failing-feed-desktop.png` and
`failing-feed-390.png` (the podcast's page), `failing-feed-list-desktop.png` and
`failing-feed-list-390.png`, under TEST_OUTPUT_DIR/e2e/.
"""

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from core import clock
from feedchecks import services as feedchecks
from feedchecks.models import FeedCheck
from subscriptions import feeds
from subscriptions.models import Subscription
from tests.e2e.browser import (
    accessibility_violations,
    at_width,
    main_text,
    screenshot,
    sideways_scroll,
)
from tests.factories import UserFactory
from tests.feedchecks.feedserver import FeedServer, rss
from tests.helpers import subscribe, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("transactional_db", "plain_http_cookies")]

PASSWORD = "a long and unusual passphrase 31"
# A host that never resolves, on a long path of many scripts: the words and the URL must wrap.
UNRESOLVED = (
    "https://ünïcödé-podcasts.invalid/"
    + "eine-sehr-lange-pfadangabe/" * 8
    + "日本語のポッドキャスト/Ελληνικά/feed.xml"
)
WIDTHS = {"desktop": 1366, "390": 390, "320": 320}


@pytest.fixture
def feed_server(settings: Any) -> Iterator[FeedServer]:
    server = FeedServer().start()
    settings.FEED_CHECKS_ENABLED = True
    settings.FEED_CHECK_THREADS = 2  # as under `make run`: off the request's path
    settings.FEED_FETCH_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    settings.FEED_FETCH_TIMEOUT = 3.0
    try:
        yield server
    finally:
        feedchecks.wait_for_background_checks(timeout=30)
        server.stop()


def checked(url: str) -> bool:
    check = FeedCheck.objects.filter(key_digest=feeds.feed_key_digest(url)).first()
    if check is None or check.checked is None or check.claimed is None:
        return False
    return check.checked >= check.claimed


def looks_right(browser: WebDriver, what: str) -> None:
    """No sideways scroll, and no serious accessibility violation."""
    wider = sideways_scroll(browser)
    assert wider <= 0, f"{what} scrolls sideways by {wider}px"
    violations = accessibility_violations(browser)
    assert not violations, f"{what}: {violations}"


def show(browser: WebDriver, xpath: str) -> None:
    """Scroll the first element `xpath` finds into the middle of the window, for a screenshot."""
    element = browser.find_element(By.XPATH, xpath)
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)


def main_words(browser: WebDriver) -> str:
    return " ".join(main_text(browser).split())


def test_a_failing_feed_on_the_list_and_its_page_and_check_now(
    live_server: Any, browser: WebDriver, feed_server: FeedServer
) -> None:
    person: Any = UserFactory(username="alice", with_password=PASSWORD)
    missing = feed_server.url("/gone.xml")  # no route yet: 404
    feed_server.feed("/fine.xml", rss())
    for url in (missing, UNRESOLVED, feed_server.url("/fine.xml")):
        subscribe(person, url)
    wait_until(
        lambda: all(checked(url) for url in (missing, UNRESOLVED, feed_server.url("/fine.xml"))),
        30,
        "the first checks",
    )
    sub = Subscription.objects.get(user=person, feed_url=missing)

    browser.get(f"{live_server.url}/login/")
    browser.find_element(By.NAME, "username").send_keys("alice")
    browser.find_element(By.NAME, "password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "main button[type=submit]").click()
    WebDriverWait(browser, 20).until(expected_conditions.url_contains("/podcasts/"))

    for name, width in WIDTHS.items():
        at_width(browser, width, 900)
        browser.get(f"{live_server.url}/podcasts/")
        listed = main_words(browser)
        assert "Can't be fetched: nothing was found at its address. Last tried" in listed
        assert "Can't be fetched: its host name could not be found." in listed
        assert listed.count("Can't be fetched") == 2  # the show that was read says nothing
        assert "next try after" in listed
        looks_right(browser, f"/podcasts/ at {name}")
        if name != "320":
            show(browser, "//li[@class='podcast'][.//p[@class='feed-problem']]")
            screenshot(browser, f"failing-feed-list-{name}")

        browser.get(f"{live_server.url}/podcasts/{sub.guid}/")
        shown = main_words(browser)
        assert "This feed can't be fetched: nothing was found at its address." in shown
        assert "Details: HTTP 404" in shown
        assert "Last tried" in shown
        assert "Next try after" in shown
        looks_right(browser, f"the podcast's page at {name}")
        if name != "320":
            show(browser, "//section[@class='feed-health']")
            screenshot(browser, f"failing-feed-{name}")

        unresolved = Subscription.objects.get(user=person, feed_url=UNRESOLVED)
        browser.get(f"{live_server.url}/podcasts/{unresolved.guid}/")
        assert "its host name could not be found" in main_words(browser)
        looks_right(browser, f"the unresolved podcast's page at {name}")

    # Some minutes later the feed is back: Check now reads it at once, whatever the check
    # interval (and the next try above).
    at_width(browser, WIDTHS["desktop"])
    minutes_ago = clock.now() - timedelta(minutes=5)
    FeedCheck.objects.filter(url=missing).update(claimed=minutes_ago, checked=minutes_ago)
    feed_server.feed("/gone.xml", rss())
    browser.get(f"{live_server.url}/podcasts/{sub.guid}/")
    browser.find_element(By.XPATH, "//button[normalize-space()='Check now']").click()
    WebDriverWait(browser, 20).until(
        expected_conditions.text_to_be_present_in_element(
            (By.CSS_SELECTOR, ".messages"), "The feed is being checked."
        )
    )
    looks_right(browser, "the podcast's page after Check now")
    wait_until(lambda: FeedCheck.objects.get(url=missing).failure == "", 30, "the check asked for")
    feedchecks.wait_for_background_checks(timeout=30)
    browser.get(f"{live_server.url}/podcasts/{sub.guid}/")
    shown = main_words(browser)
    assert "The last check read the feed." in shown
    assert "A show" in shown  # its title, read by that check
    assert "can't be fetched" not in shown
    assert feed_server.requests.count("/gone.xml") == 2

    # Asked again at once: refused, with the limit in words.
    browser.find_element(By.XPATH, "//button[normalize-space()='Check now']").click()
    WebDriverWait(browser, 20).until(
        expected_conditions.text_to_be_present_in_element(
            (By.CSS_SELECTOR, ".messages"), "each feed can be checked once a minute"
        )
    )
    looks_right(browser, "the podcast's page with Check now refused")
    assert feed_server.requests.count("/gone.xml") == 2
