"""A feed's publisher cannot break anyone's way out: only characters XML 1.0 allows reach a
stored title, a catalogue field or a feed URL, and the OPML and JSON writers drop any that an
older version stored (docs/api.md, "Feed URLs"; docs/web.md, "Your data")."""

import base64
import json
from typing import Any

import pytest
from defusedxml.ElementTree import fromstring
from django.test import Client
from rest_framework.test import APIClient

from core.text import is_xml_text, xml_text
from feedchecks import parsing
from feedchecks.models import FeedCheck, FeedEpisode
from subscriptions import feeds, opml
from subscriptions.models import Subscription
from tests.factories import UserFactory
from tests.feedchecks.feedserver import FeedServer
from tests.feedchecks.test_feed_identity import check_of
from tests.helpers import assert_error, subscribe

PASSWORD = "correct horse battery staple"
# U+FFFF and U+FFFE as raw UTF-8 (a feedparser fallback reads what expat refuses) and as
# character references; a control character besides.
HOSTILE_TITLE = b"Show \xef\xbf\xbf one &#xFFFE; two &#xFFFF; three \x01"
HOSTILE_FEED = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n'
    b'<rss version="2.0" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd"><channel>'
    b"<title>" + HOSTILE_TITLE + b"</title>"
    b"<itunes:new-feed-url>https://moved.example/\xef\xbf\xbf</itunes:new-feed-url>"
    b"<item><guid>g-\xef\xbf\xbe</guid><title>Ep &#xFFFF;one</title>"
    b'<enclosure url="https://cdn.example/1.mp3" type="audio/mpeg"/></item>'
    b"<item><guid>g2</guid><title>Ep two\xef\xbf\xbf</title>"
    b"<link>https://show.example/\xef\xbf\xbf</link>"
    b'<enclosure url="https://cdn.example/2.mp3?\xef\xbf\xbe" type="audio/mpeg"/></item>'
    b"</channel></rss>"
)


def _basic(username: str) -> str:
    return "Basic " + base64.b64encode(f"{username}:{PASSWORD}".encode()).decode()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain", "plain"),
        ("a\uffffb\ufffec", "abc"),
        ("tab\tnew\nline\rok", "tab\tnew\nline\rok"),
        ("nul\x00bell\x07", "nulbell"),
        ("emoji 🎧 and \ue000 private use", "emoji 🎧 and \ue000 private use"),
        ("\ud800lone", "lone"),
    ],
)
def test_only_xml_characters_are_kept(text: str, expected: str) -> None:
    assert xml_text(text) == expected
    assert is_xml_text(expected)
    assert is_xml_text(text) == (text == expected)


@pytest.mark.parametrize("character", ["\uffff", "\ufffe"])
def test_a_feed_url_with_a_character_xml_refuses_is_refused(
    api: APIClient, user: Any, character: str
) -> None:
    with pytest.raises(feeds.InvalidFeedUrl):
        feeds.check_feed_url(f"https://show.example/feed{character}.xml")
    response = api.post(
        "/v1/subscriptions",
        {"subscriptions": [{"feed_url": f"https://show.example/feed{character}.xml"}]},
        format="json",
    )
    assert response.status_code == 200, response.content
    (failure,) = response.json()["failure"]
    assert failure["message"] == "Feed URL contains whitespace, control or invalid characters"
    assert not Subscription.objects.filter(user=user).exists()


def test_the_parser_keeps_no_character_xml_refuses() -> None:
    found = parsing.feed_identity(HOSTILE_FEED, episodes_kept=10)
    assert found.title == "Show one two three"
    assert found.new_feed_url is None  # an unusable address is no address
    fields = [found.title, found.link, found.image_url]
    for item in found.episodes:
        fields += [item.guid, item.title, item.url, item.link, item.image_url]
    assert all(is_xml_text(value) for value in fields), fields
    assert {item.title for item in found.episodes} == {"Ep one", "Ep two"}


def test_a_checked_feed_stores_only_xml_characters_and_every_export_reads_back(
    db: None, checks: Any, feed_server: FeedServer, add: Any, settings: Any
) -> None:
    settings.FEED_EPISODES_KEPT = 10
    owner: Any = UserFactory(username="owner", with_password=PASSWORD)
    url = feed_server.url("/show.xml")
    feed_server.feed("/show.xml", HOSTILE_FEED)
    add(owner, url)

    check = check_of(url)
    assert check.title == "Show one two three"
    assert check.new_url == ""
    stored = [check.title, check.link, check.image_url, check.new_url, check.error]
    for episode in FeedEpisode.objects.filter(feed=check):
        stored += [episode.guid, episode.title, episode.url, episode.link, episode.image_url]
    assert all(is_xml_text(value) for value in stored), stored

    _every_export_reads_back(owner, url, "Show one two three")


def test_what_an_older_version_stored_is_dropped_by_the_writers(db: None) -> None:
    """Titles and URLs stored before the rules kept such characters out."""
    owner: Any = UserFactory(username="owner", with_password=PASSWORD)
    url = "https://old.example/feed"
    subscribe(owner, url)
    FeedCheck.objects.create(
        key_digest=feeds.feed_key_digest(url), url=url, title="Old\uffff show\ufffe\x02"
    )
    # A subscription's URL stored exactly as an older version took it.
    odd = subscribe(owner, "https://odd.example/f")
    Subscription.objects.filter(pk=odd.pk).update(feed_url="https://odd.example/f\uffff")

    _every_export_reads_back(owner, url, "Old show")

    page = Client()
    page.force_login(owner)
    document = b"".join(page.get("/data/everything.json").streaming_content)  # type: ignore[attr-defined]
    exported = json.loads(document)
    titles = {sub["feed_url"]: sub["title"] for sub in exported["subscriptions"]}
    assert titles[url] == "Old show"


def _every_export_reads_back(owner: Any, url: str, title: str) -> None:
    """The OPML of /v1/, of the gpodder API and of the pages is well-formed XML, names the feed
    by its title, and the service's own import takes it into another account."""
    api = APIClient()
    api.force_authenticate(owner)
    page = Client()
    page.force_login(owner)
    gpodder = APIClient(HTTP_AUTHORIZATION=_basic("owner"))
    documents: dict[str, Any] = {
        "/v1/": api.get("/v1/subscriptions.opml"),
        "gpodder": gpodder.get("/subscriptions/owner.opml"),
        "pages": page.get("/data/subscriptions.opml"),
    }
    for where, response in documents.items():
        assert response.status_code == 200, (where, response.content)
        root = fromstring(response.content, forbid_dtd=True)  # raises on an ill-formed one
        outlines = {o.get("xmlUrl"): o.get("title") for o in root.iter("outline")}
        # The gpodder API's list names URLs alone, as gpodder.net's does.
        assert outlines[url] == (None if where == "gpodder" else title), where
        assert all(is_xml_text(value) for value in outlines if value), where

        newcomer: Any = UserFactory()
        importer = APIClient()
        importer.force_authenticate(newcomer)
        imported = importer.post(
            "/v1/subscriptions.opml", data=response.content, content_type="text/x-opml"
        )
        assert imported.status_code in (200, 207), (where, imported.content)
        assert Subscription.objects.filter(user=newcomer, feed_url=url).exists(), where
        assert [f.url for f in opml.opml_parse(response.content)] == list(outlines), where


def test_an_import_of_a_document_holding_such_a_character_is_refused_in_words(
    api: APIClient,
) -> None:
    document = (
        b'<?xml version="1.0" encoding="UTF-8"?><opml version="2.0"><head/><body>'
        b'<outline text="x&#xFFFF;" xmlUrl="https://a.example/f"/></body></opml>'
    )
    response = api.post("/v1/subscriptions.opml", data=document, content_type="text/x-opml")
    assert_error(response, 405)
