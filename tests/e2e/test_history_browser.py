"""The listening history of a long import, in headless Chromium against a live server, at a
laptop's width (1366 px) and a phone's (390 px): 40 plays of one show, which History shows as
"40 episodes" with its 10 latest and "And 30 more episodes", leading to the show's page, whose
listening history pages through all 40, 20 a page; and History's own pages of podcasts.

Each page passes axe-core and does not scroll sideways; the screenshots are saved under
TEST_OUTPUT_DIR/e2e/ as `history-*.png`.
"""

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from episodes import services as episodes
from episodes.actions import actions_parsed
from feedchecks.models import FeedCheck, FeedEpisode
from subscriptions import feeds
from tests.e2e.browser import at_width, count, screenshot, sideways_scroll
from tests.e2e.test_web_browser import Visit
from tests.factories import UserFactory
from tests.helpers import subscribe, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("transactional_db", "plain_http_cookies")]

PASSWORD = "a long and unusual passphrase 53"
SHOW = "https://feeds.example/imported-show.xml"
TITLE = "Das große Archiv: Gespräche über Schifffahrtsgesellschaften"
EPISODE = "Folge {n}: Über Donaudampfschifffahrtsgesellschaftskapitäne und ihre Mützen"
START = datetime(2023, 3, 1, 7, 0, tzinfo=UTC)


def imported(person: Any) -> Any:
    """40 plays of the show's 40 episodes (named by its feed's catalogue), on two devices, as an
    import from an old server leaves them; and 11 other podcasts played once each, earlier."""
    sub = subscribe(person, SHOW)
    check = FeedCheck.objects.create(key_digest=feeds.feed_key_digest(SHOW), url=SHOW, title=TITLE)
    FeedEpisode.objects.bulk_create(
        FeedEpisode(
            feed=check,
            item_key=f"ep-{n}",
            guid=f"ep-{n}",
            title=EPISODE.format(n=n),
            url=f"https://media.example/show/{n}.mp3",
            url_key=feeds.url_key_digest(f"https://media.example/show/{n}.mp3"),
            published=START + timedelta(days=n),
            duration=3600,
        )
        for n in range(40)
    )
    plays = [
        {
            "podcast": SHOW,
            "episode": f"https://media.example/show/{n}.mp3",
            "action": "play",
            "device": ("phone", "laptop")[n % 2],
            "timestamp": (START + timedelta(days=n, hours=20)).strftime("%Y-%m-%dT%H:%M:%S"),
            "started": 0,
            "position": 3600 if n < 39 else 1200,
            "total": 3600,
        }
        for n in range(40)
    ]
    plays += [
        {
            "podcast": f"https://other-{p}.example/feed.xml",
            "episode": f"https://other-{p}.example/one.mp3",
            "action": "download",
            "device": "phone",
            "timestamp": (START - timedelta(days=p + 1)).strftime("%Y-%m-%dT%H:%M:%S"),
        }
        for p in range(11)
    ]
    episodes.actions_upload(user=person, actions=actions_parsed(plays, limit=100))
    return sub


def sign_in(visit: Visit, username: str) -> None:
    visit.open("/login/")
    visit.browser.find_element(By.NAME, "username").send_keys(username)
    visit.browser.find_element(By.NAME, "password").send_keys(PASSWORD)
    visit.click("main button[type=submit]")
    wait_until(lambda: "/podcasts/" in visit.browser.current_url, 20, "the signed-in page")


def shown_episodes(browser: WebDriver, within: str) -> list[str]:
    return [
        element.text
        for element in browser.find_elements(By.CSS_SELECTOR, f"{within} .actions-list .episode")
    ]


def follow(visit: Visit, link: str, wanted: str) -> None:
    """Click the link named `link` and wait for the address to hold `wanted`."""
    visit.browser.find_element(By.LINK_TEXT, link).click()
    wait_until(lambda: wanted in visit.browser.current_url, 20, wanted)


def fits(visit: Visit, name: str, width: int) -> None:
    """The page passes axe-core and does not scroll sideways; its screenshot is saved, and
    another at its pages' links (the "more" link above them on History's first page)."""
    visit.check(f"{name} at {width} px")
    overflow = sideways_scroll(visit.browser)
    assert overflow <= 0, f"{name} at {width} px scrolls sideways by {overflow}px"
    screenshot(visit.browser, f"history-{name}-{width}")
    visit.browser.execute_script(
        "document.querySelector('main nav.pages').scrollIntoView({block: 'end'})"
    )
    screenshot(visit.browser, f"history-{name}-{width}-pages")


@pytest.mark.parametrize("width", [1366, 390])
def test_forty_plays_of_one_show_are_all_reached_from_the_history(
    live_server: Any, browser: WebDriver, width: int
) -> None:
    person: Any = UserFactory(username=f"archivist-{width}", with_password=PASSWORD)
    sub = imported(person)
    visit = Visit(browser, live_server.url)
    sign_in(visit, person.username)
    at_width(browser, width, scale=2 if width < 600 else 1)
    try:
        # History: the show first, its count, its 10 latest, and the way to the others.
        visit.open("/history/")
        text = visit.text()
        assert "12 podcasts." in text
        first = "main section.history:first-of-type"
        assert browser.find_element(By.CSS_SELECTOR, f"{first} h2 a").text == TITLE
        assert browser.find_element(By.CSS_SELECTOR, f"{first} .count").text == "40 episodes"
        assert shown_episodes(browser, first) == [EPISODE.format(n=n) for n in range(39, 29, -1)]
        assert "Played to 20:00 of 1:00:00" in text
        assert "Page 1 of 2" in text
        fits(visit, "01-history", width)

        # History's older page: the podcasts played before.
        follow(visit, "Older", "page=2")
        assert count(browser, "main section.history") == 2
        assert "Page 2 of 2" in visit.text()
        fits(visit, "02-history-older", width)
        follow(visit, "Newer", "page=1")

        # "And 30 more episodes" leads to the show's page, at its listening history.
        more = browser.find_element(By.CSS_SELECTOR, f"{first} .more a")
        assert more.text.startswith("And 30 more episodes")  # "of" the show, to screen readers
        more.click()
        wait_until(lambda: "#history" in browser.current_url, 20, "the podcast's page")
        assert browser.current_url == f"{live_server.url}/podcasts/{sub.guid}/#history"
        top = browser.execute_script(
            "return document.getElementById('history').getBoundingClientRect().top"
        )
        assert 0 <= top < 200, top  # the browser went to the listening history
        history = "main #history ~ "
        seen = shown_episodes(browser, history)
        assert seen == [EPISODE.format(n=n) for n in range(39, 19, -1)]
        assert "40 episodes your apps told of" in visit.text()
        assert "Page 1 of 2" in visit.text()
        fits(visit, "03-podcast", width)

        follow(visit, "Older", "page=2#history")
        older = shown_episodes(browser, history)
        assert older == [EPISODE.format(n=n) for n in range(19, -1, -1)]
        assert "Page 2 of 2" in visit.text()
        fits(visit, "04-podcast-older", width)
        assert sorted(seen + older) == sorted(EPISODE.format(n=n) for n in range(40))

        follow(visit, "Newer", "page=1#history")
        assert shown_episodes(browser, history) == seen
    finally:
        at_width(browser, None)
    assert len(visit.checked) == 6
