"""Episodes by name in a real browser: headless Chromium, driven by Selenium, against a live
server whose feed checks fetch a real feed from a local server, off the request's path as under
`make run`.

An app subscribes to a podcast and uploads what was played; the person signs in and sees, on the
history page and on the podcast's page, each episode by its title in the feed (the file name only
for an episode the feed does not list), the podcast's title and artwork, and the episodes'
publication dates. Two titles carry markup: one whose tags the feed check drops, one whose
escaped `<script>` and `<img onerror>` are its text, which the pages must show as text, never
run. Each page is checked by axe-core and shown at a desktop's and a phone's width (390 px),
each screenshot saved under TEST_OUTPUT_DIR/e2e/ as `catalogue-*.png`.
"""

import struct
import zlib
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from feedchecks import services as feedchecks
from tests.e2e.browser import at_width, count, screenshot, sideways_scroll
from tests.e2e.test_web_browser import Visit
from tests.factories import UserFactory
from tests.feedchecks.feedserver import FeedServer
from tests.helpers import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("transactional_db", "plain_http_cookies")]

PASSWORD = "a long and unusual passphrase 31"
TIMEOUT = 10
SHOW = "Night Owls & Friends"
# What the feed's titles read as, once the feed check made them plain text.
MARKUP = "Ep bold moves alert(1)"  # tags in the feed's title, dropped
ESCAPED = (  # escaped twice in the feed: this is its text, which the pages must escape
    "Escaped <script>document.title='pwned'</script> <img src=x onerror=alert(2)> and more"
)
DAWN = "Owls at Dawn: a conversation about nocturnal birds and insomniacs who listen to them"
QUIET = "Quiet episode nobody played"
MEDIA = "https://media.owls.example/ep"


def png(width: int = 48, height: int = 48) -> bytes:
    """A small solid PNG, for the podcast's artwork."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\x00" + b"\x1f\x4e\x79" * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def owls_feed(art_url: str) -> bytes:
    def item(n: int, title: str, day: str, extra: str = "") -> str:
        return (
            f'<item><title>{title}</title><guid isPermaLink="false">owls-{n}</guid>'
            f'<enclosure url="{MEDIA}/owls-00{n}.mp3" length="1" type="audio/mpeg"/>'
            f"<pubDate>{day} 12:00:00 GMT</pubDate>{extra}</item>"
        )

    items = [
        item(
            1,
            "Ep &lt;b&gt;bold&lt;/b&gt; moves &lt;script&gt;alert(1)&lt;/script&gt;",
            "Tue, 02 Jan 2024",
            "<link>https://owls.example/episodes/1</link><itunes:duration>30:00</itunes:duration>",
        ),
        item(
            2,
            "Escaped &amp;lt;script&amp;gt;document.title='pwned'&amp;lt;/script&amp;gt;"
            " &amp;lt;img src=x onerror=alert(2)&amp;gt; and more",
            "Mon, 05 Feb 2024",
            "<link>javascript:alert(3)</link>",
        ),
        item(3, DAWN, "Mon, 11 Mar 2024"),
        item(4, QUIET, "Mon, 15 Apr 2024"),
    ]
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<rss version="2.0" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd">'
        "<channel><title>Night Owls &amp; Friends</title><link>https://owls.example/</link>"
        f'<itunes:image href="{art_url}"/>' + "".join(items) + "</channel></rss>"
    ).encode()


@pytest.fixture
def owls(settings: Any) -> Iterator[FeedServer]:
    server = FeedServer().start()
    server.feed("/owls.xml", owls_feed(server.url("/art.png")))
    artwork = png()

    def art(handler: Any) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "image/png")
        handler.send_header("Content-Length", str(len(artwork)))
        handler.end_headers()
        handler.wfile.write(artwork)

    server.routes["/art.png"] = art
    settings.FEED_CHECKS_ENABLED = True
    settings.FEED_CHECK_THREADS = 2  # as under `make run`: off the request's path
    settings.FEED_FETCH_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    try:
        yield server
    finally:
        feedchecks.wait_for_background_checks(timeout=30)
        server.stop()


def app_syncs(base: str, feed: str) -> None:
    """An app (Basic on every request) names its device, subscribes, and uploads its plays: by
    enclosure URL without a guid, as gPodder sends them, or with the item's guid under another
    URL (a tracking redirect), as AntennaPod may; and one on a file the feed does not list."""
    app = requests.Session()
    app.auth = ("alice", PASSWORD)
    for path, body in (
        ("/api/2/devices/alice/phone.json", {"caption": "Alice's phone", "type": "mobile"}),
        ("/api/2/subscriptions/alice/phone.json", {"add": [feed], "remove": []}),
    ):
        response = app.post(base + path, json=body, timeout=TIMEOUT)
        assert response.status_code == 200, response.text

    def action(episode: str, what: str, **more: Any) -> dict[str, Any]:
        return {"podcast": feed, "episode": episode, "action": what, "device": "phone", **more}

    played = {"started": 0, "position": 600, "total": 1800}
    actions = [
        action(f"{MEDIA}/owls-001.mp3", "play", timestamp="2024-05-01T08:00:00", **played),
        action(
            "https://dts.tracker.example/redirect.mp3/owls-002.mp3",
            "play",
            guid="owls-2",
            timestamp="2024-05-01T09:00:00",
            **played,
        ),
        action(f"{MEDIA}/owls-003.mp3", "download", timestamp="2024-05-01T10:00:00"),
        action(f"{MEDIA}/mystery-file.mp3", "play", timestamp="2024-05-01T11:00:00", **played),
    ]
    response = app.post(f"{base}/api/2/episodes/alice.json", json=actions, timeout=TIMEOUT)
    assert response.status_code == 200, response.text


def sign_in(visit: Visit) -> None:
    visit.open("/login/")
    visit.browser.find_element(By.NAME, "username").send_keys("alice")
    visit.browser.find_element(By.NAME, "password").send_keys(PASSWORD)
    visit.click("main button[type=submit]")
    wait_until(lambda: "/podcasts/" in visit.browser.current_url, 20, "the signed-in page")


def assert_nothing_injected(browser: WebDriver) -> None:
    """The titles' markup is text: no element, script, link or alert came of it."""
    assert count(browser, "img[src='x'], img[onerror]") == 0
    assert count(browser, "a[href^='javascript']") == 0
    scripts = browser.execute_script(
        "return [...document.scripts].map(s => s.textContent).join('\\n')"
    )
    assert "pwned" not in scripts
    assert "alert(" not in scripts
    assert "pwned" not in browser.title
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # noqa: B018
    shown = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "main .episode")]
    assert ESCAPED in shown, shown  # the whole title, as text


def scroll_to(browser: WebDriver, css: str) -> None:
    """Bring the part of the page under test into the screenshot."""
    browser.execute_script(
        "document.querySelector(arguments[0]).scrollIntoView({block: 'start'})", css
    )


def assert_fits_a_phone(visit: Visit, name: str, part: str) -> None:
    at_width(visit.browser, 390, scale=2)
    try:
        visit.browser.refresh()
        overflow = sideways_scroll(visit.browser)
        assert overflow <= 0, f"{name} is {overflow}px wider than a phone"
        visit.check(f"{name} at 390 px")
        assert_nothing_injected(visit.browser)
        scroll_to(visit.browser, part)
        screenshot(visit.browser, f"{name}-390px")
    finally:
        at_width(visit.browser, None)


def test_plays_an_app_uploaded_are_shown_by_episode_title(
    live_server: Any, browser: WebDriver, owls: FeedServer
) -> None:
    UserFactory(username="alice", with_password=PASSWORD)
    feed = owls.url("/owls.xml")
    app_syncs(live_server.url, feed)

    visit = Visit(browser, live_server.url)
    sign_in(visit)

    # The feed check runs in the background: the history names the episodes once it has.
    def named() -> bool:
        browser.get(f"{live_server.url}/history/")
        return MARKUP in visit.text()

    wait_until(named, 30, lambda: visit.text())
    visit.check("/history/")
    text = visit.text()
    for title in (SHOW, MARKUP, ESCAPED, DAWN):
        assert title in text, text
    for date in ("published 2024-01-02", "published 2024-02-05", "published 2024-03-11"):
        assert date in text
    assert "mystery-file.mp3" in text  # not in the feed: its file name
    for file_name in ("owls-001", "owls-002", "owls-003", "redirect.mp3"):
        assert file_name not in text
    assert QUIET not in text  # nobody played it
    assert "Played to 10:00 of 30:00" in text
    assert "Downloaded" in text
    heading = browser.find_element(By.CSS_SELECTOR, "main section.history h2")
    assert heading.text == SHOW
    art = heading.find_element(By.CSS_SELECTOR, "img.art")
    assert art.get_attribute("src") == owls.url("/art.png")
    wait_until(
        lambda: browser.execute_script("return arguments[0].naturalWidth", art) > 0,
        10,
        "the podcast's artwork",
    )
    assert_nothing_injected(browser)
    screenshot(browser, "catalogue-01-history")
    assert_fits_a_phone(visit, "catalogue-02-history", "main section.history")

    # The podcast's own page, from its heading: every episode of the feed, newest first.
    browser.find_element(By.CSS_SELECTOR, "main section.history h2 a").click()
    wait_until(lambda: "/podcasts/" in browser.current_url, 20, "the podcast's page")
    visit.check("/podcasts/<guid>/")
    assert browser.find_element(By.TAG_NAME, "h1").text == SHOW
    rows = browser.find_elements(By.CSS_SELECTOR, "main .episodes-list > li")
    titles = [row.find_element(By.CSS_SELECTOR, ".episode").text for row in rows]
    assert titles == [QUIET, DAWN, ESCAPED, MARKUP]
    by_title = dict(zip(titles, (row.text for row in rows), strict=True))
    assert "2024-04-15" in by_title[QUIET]
    assert "not played" in by_title[QUIET]
    assert "Downloaded on Alice's phone" in by_title[DAWN]
    assert "Played to 10:00 of 30:00 on Alice's phone" in by_title[ESCAPED]
    assert "2024-01-02, 30:00" in by_title[MARKUP]
    assert "Played to 10:00 of 30:00 on Alice's phone" in by_title[MARKUP]
    link = rows[3].find_element(By.CSS_SELECTOR, ".episode a")
    assert link.get_attribute("href") == "https://owls.example/episodes/1"
    activity = browser.find_elements(By.CSS_SELECTOR, "main .actions-list .episode")
    assert [e.text for e in activity] == ["mystery-file.mp3", DAWN, ESCAPED, MARKUP]
    assert_nothing_injected(browser)
    scroll_to(browser, "main .episodes-list")
    screenshot(browser, "catalogue-03-podcast")
    assert_fits_a_phone(visit, "catalogue-04-podcast", "main .episodes-list")
    assert len(visit.checked) == 5
