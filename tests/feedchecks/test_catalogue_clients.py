"""Real clients' uploads end up named (the episode catalogue, docs/web.md, "Episodes by name"),
against a live server whose feed checks fetch a real feed from a local server.

mygpoclient 1.10 (the library inside gPodder), unmodified, subscribes and uploads episode
actions as gPodder does: without guids, by the enclosure URL (one in another spelling of it). A
replay of AntennaPod's requests (tests/episodes/clients.py) subscribes and uploads plays
with each item's guid, some under another URL than the feed's enclosure. Then the person signs
in on the pages as a browser does and reads their history: each episode by its title in the
feed, and the file name only for an episode the feed does not list.
"""

import html
import json
import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
import requests
from mygpoclient import api, util

from tests.episodes.clients import AntennaPod
from tests.feedchecks.feedserver import FeedServer
from tests.helpers import PASSWORD

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("transactional_db", "plain_http_cookies")]

TIMEOUT = 10
MEDIA = "https://media.example/catalogue"
# The second item's enclosure in another spelling of the same URL (host case, default port).
SECOND = "https://MEDIA.Example:443/catalogue/2.mp3"
TITLES = {
    1: "First light: the pilot",
    2: "Second wind & other stories",
    3: "Third time lucky",
    4: "Fourth wall, no guid",  # an item without a guid: known by its enclosure only
}


def feed(*, title: str = "The Catalogue Show") -> bytes:
    def item(n: int) -> str:
        guid = f'<guid isPermaLink="false">show-{n}</guid>' if n != 4 else ""
        return (
            f"<item><title>{html.escape(TITLES[n])}</title>{guid}"
            f'<enclosure url="{MEDIA}/{n}.mp3" length="1" type="audio/mpeg"/>'
            f"<pubDate>Mon, 0{n} Jan 2024 12:00:00 GMT</pubDate></item>"
        )

    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0">'
        f"<channel><title>{html.escape(title)}</title>"
        + "".join(item(n) for n in TITLES)
        + "</channel></rss>"
    ).encode()


@pytest.fixture
def show(settings: Any, feed_server: FeedServer) -> Iterator[str]:
    """A feed the service may fetch (checks on, loopback allowed): its URL."""
    settings.FEED_CHECKS_ENABLED = True
    settings.FEED_FETCH_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    settings.FEED_FETCH_CONNECT_TIMEOUT = 2.0
    settings.FEED_FETCH_TIMEOUT = 5.0
    feed_server.feed("/show.xml", feed())
    yield feed_server.url("/show.xml")
    # The app's subscription had the feed fetched.
    assert "/show.xml" in feed_server.requests


def signed_in(base: str, username: str = "alice", password: str = PASSWORD) -> requests.Session:
    """A browser's session: the sign-in page's CSRF cookie and token, then the form posted."""
    browser = requests.Session()
    form = browser.get(f"{base}/login/", timeout=TIMEOUT)
    assert form.status_code == 200
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
    assert token is not None, form.text
    done = browser.post(
        f"{base}/login/",
        data={"username": username, "password": password, "csrfmiddlewaretoken": token[1]},
        headers={"Referer": f"{base}/login/"},
        timeout=TIMEOUT,
    )
    assert done.status_code == 200, done.text
    assert done.url.endswith("/podcasts/"), done.text
    return browser


def history_names(base: str) -> tuple[list[str], str]:
    """The episodes the history page names, in its order, and the page's text."""
    page = signed_in(base).get(f"{base}/history/", timeout=TIMEOUT)
    assert page.status_code == 200
    names = re.findall(r'<span class="episode">(.*?)</span>', page.text, re.S)
    text = " ".join(html.unescape(re.sub(r"<[^>]*>", " ", page.text)).split())
    return [html.unescape(name) for name in names], text


def test_gpodders_uploads_without_guids_are_named_by_their_enclosure(live_server, alice, show):
    gpodder = api.MygPodderClient("alice", PASSWORD, root_url=live_server.url)
    assert gpodder.update_device_settings("laptop", caption="Laptop", type="laptop") is True
    gpodder.update_subscriptions("laptop", add_urls=[show])
    when = [util.datetime_to_iso8601(datetime(2024, 5, 1, 10, m)) for m in range(5)]
    gpodder.upload_episode_actions(
        [
            api.EpisodeAction(show, f"{MEDIA}/1.mp3", "download", "laptop", when[0]),
            api.EpisodeAction(show, f"{MEDIA}/1.mp3", "play", "laptop", when[1], 0, 120, 3600),
            api.EpisodeAction(show, SECOND, "play", "laptop", when[2], 0, 30, 1800),
            api.EpisodeAction(show, f"{MEDIA}/4.mp3", "play", "laptop", when[3], 0, 60, 600),
            api.EpisodeAction(show, f"{MEDIA}/unlisted-bonus.mp3", "download", "laptop", when[4]),
        ]
    )

    names, text = history_names(live_server.url)

    assert names == ["unlisted-bonus.mp3", TITLES[4], TITLES[2], TITLES[1]]
    assert "The Catalogue Show" in text
    assert "published 2024-01-01" in text
    assert "published 2024-01-04" in text
    assert "Played to 2:00 of 1:00:00 on Laptop" in text
    # mygpoclient reads back what it sent, unchanged by the names.
    got = gpodder.download_episode_actions(since=0)
    assert {a.episode for a in got.actions} == {
        f"{MEDIA}/1.mp3",
        SECOND,
        f"{MEDIA}/4.mp3",
        f"{MEDIA}/unlisted-bonus.mp3",
    }
    # The download of everything names them beside their URLs, when known.
    export = signed_in(live_server.url).get(f"{live_server.url}/data/everything.json")
    assert export.status_code == 200
    actions = json.loads(export.content)["episode_actions"]
    assert {a["episode"]: a.get("episode_title") for a in actions} == {
        f"{MEDIA}/1.mp3": TITLES[1],
        SECOND: TITLES[2],
        f"{MEDIA}/4.mp3": TITLES[4],
        f"{MEDIA}/unlisted-bonus.mp3": None,
    }
    assert "episode_title" not in actions[-1]


def test_antennapods_plays_with_guids_are_named_whatever_their_url(live_server, alice, show):
    phone = AntennaPod(live_server.url, "alice", "antennapod-phone")
    phone.login()
    phone.configure_device("Pixel", "mobile")
    assert phone.upload_changes([show], [])["update_urls"] == {}

    def play(n: int, episode: str, guid: str) -> dict[str, Any]:
        """EpisodeAction.writeToJsonObject of a play action."""
        return {
            "podcast": show,
            "episode": episode,
            "guid": guid,
            "action": "play",
            "timestamp": f"2024-05-02T10:0{n}:00",
            "started": 0,
            "position": 300 * n,
            "total": 1800,
        }

    phone.episode_sync(
        [
            play(1, f"{MEDIA}/1.mp3", "show-1"),
            # Downloaded through a tracking redirect the feed has dropped since: its guid names it.
            play(
                2,
                "https://dts.tracker.example/redirect.mp3/media.example/catalogue/3.mp3",
                "show-3",
            ),
            play(3, f"{MEDIA}/4.mp3", ""),  # the guid-less item: by its enclosure
            play(4, f"{MEDIA}/elsewhere.mp3", "not-in-this-feed"),
        ]
    )

    names, text = history_names(live_server.url)

    assert names == ["elsewhere.mp3", TITLES[4], TITLES[3], TITLES[1]]
    assert "The Catalogue Show" in text
    assert "published 2024-01-03 Played to 10:00 of 30:00 on Pixel" in text
    assert "redirect.mp3" not in text
