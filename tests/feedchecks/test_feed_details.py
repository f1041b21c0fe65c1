"""What a check keeps for people to read (docs/api.md, "Feed identity"): each feed's title,
website and artwork; the last good ones when a later fetch fails; read with the subscriptions in
one query; named in the OPML export; and, without a broker, checked off the request's path."""

import threading
import time
from typing import Any

import pytest
from rest_framework.test import APIClient

from feedchecks import parsing, services
from feedchecks.models import FeedCheck
from feedchecks.selectors import subscriptions_with_feed_details
from subscriptions import feeds
from subscriptions.models import Subscription
from subscriptions.services import (
    AddEntry,
    SubscriptionUpdate,
    subscription_add_many,
    subscription_update,
)
from tests.feedchecks.feedserver import FeedServer
from tests.feedchecks.test_feed_identity import check_of
from tests.helpers import subscribe


def rss(channel: str) -> bytes:
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<rss version="2.0" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd">'
        f"<channel>{channel}<item><title>Episode 1</title></item></channel></rss>"
    ).encode()


SHOW = rss(
    "<title>  The &lt;b&gt;Big&lt;/b&gt;   Show &amp; Co  </title>"
    "<link>https://show.example/</link>"
    '<itunes:image href="https://img.example/art.jpg"/>'
)


@pytest.mark.parametrize(
    ("channel", "title", "link", "image"),
    [
        (
            "<title>  The &lt;b&gt;Big&lt;/b&gt;   Show &amp; Co  </title>"
            "<link>https://show.example/</link>"
            '<itunes:image href="https://img.example/art.jpg"/>',
            "The Big Show & Co",
            "https://show.example/",
            "https://img.example/art.jpg",
        ),
        (
            "<title>Café ☕ 🎧 Ωmega</title>"
            "<image><url>http://img.example/rss.png</url><title>x</title><link>x</link></image>",
            "Café ☕ 🎧 Ωmega",
            "",
            "http://img.example/rss.png",
        ),
        (
            "<title>x\u200by\u0007z</title><link>javascript:alert(1)</link>"
            '<itunes:image href="/relative.png"/>',
            "xyz",
            "",
            "",
        ),
        ("<link>https://only.example/</link>", "", "https://only.example/", ""),
        ("<title>" + "long " * 200 + "</title>", ("long " * 100).strip(), "", ""),
        ('<itunes:image href="data:image/png;base64,AAAA"/>', "", "", ""),
    ],
)
def test_the_title_website_and_artwork_are_read_safely(
    channel: str, title: str, link: str, image: str
) -> None:
    found = parsing.feed_identity(rss(channel))
    assert (found.title, found.link, found.image_url) == (title, link, image)
    assert len(found.title) <= parsing.MAX_TITLE_LENGTH


def test_atom_logo_is_the_artwork() -> None:
    atom = (
        b'<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>Atom show</title>'
        b'<link href="https://atom.example/"/><logo>https://atom.example/logo.png</logo></feed>'
    )
    found = parsing.feed_identity(atom)
    assert (found.title, found.link, found.image_url) == (
        "Atom show",
        "https://atom.example/",
        "https://atom.example/logo.png",
    )


def test_a_check_keeps_them_and_a_failed_one_keeps_the_last_good(
    checks: Any, feed_server: FeedServer, user: Any, add: Any
) -> None:
    url = feed_server.url("/show.xml")
    feed_server.feed("/show.xml", SHOW)
    add(user, url)
    check = check_of(url)
    assert (check.title, check.link, check.image_url) == (
        "The Big Show & Co",
        "https://show.example/",
        "https://img.example/art.jpg",
    )
    feed_server.feed("/show.xml", b"gone", status=500)
    checks.FEED_CHECK_INTERVAL = 0
    services.feed_check_run(url=url, user_id=user.pk)
    check = check_of(url)
    assert check.result == FeedCheck.Result.ERROR
    assert check.title == "The Big Show & Co"
    assert check.image_url == "https://img.example/art.jpg"


def test_details_come_with_the_subscriptions_in_one_query(
    user: Any, django_assert_num_queries: Any
) -> None:
    subscription_add_many(
        user=user, entries=[AddEntry(feed_url=f"https://f.example/{n}.xml") for n in range(200)]
    )
    FeedCheck.objects.bulk_create(
        FeedCheck(
            key_digest=feeds.feed_key_digest(f"https://f.example/{n}.xml"),
            url=f"https://f.example/{n}.xml",
            title=f"Show {n}",
            image_url=f"https://img.example/{n}.png",
        )
        for n in range(0, 200, 2)
    )
    with django_assert_num_queries(1):
        shown = list(subscriptions_with_feed_details(Subscription.objects.filter(user=user)))
    titles = {sub.feed_url: sub.feed_title for sub in shown}  # type: ignore[attr-defined]
    assert titles["https://f.example/0.xml"] == "Show 0"
    assert titles["https://f.example/1.xml"] == ""
    assert len(shown) == 200


def test_a_moved_subscription_shows_its_new_feeds_title(user: Any, clock: Any) -> None:
    sub = subscribe(user, "https://old.example/feed")
    FeedCheck.objects.create(
        key_digest=feeds.feed_key_digest("https://old.example/feed"),
        url="https://old.example/feed",
        title="Old name",
        checked=clock.now,
    )
    subscription_update(
        user=user, guid=sub.guid, change=SubscriptionUpdate(new_feed_url="https://new.example/f")
    )
    qs = Subscription.objects.filter(pk=sub.pk)
    assert subscriptions_with_feed_details(qs).get().feed_title == "Old name"  # type: ignore[attr-defined]
    clock.advance(seconds=5)
    FeedCheck.objects.create(
        key_digest=feeds.feed_key_digest("https://new.example/f"),
        url="https://new.example/f",
        title="New name",
        checked=clock.now,
    )
    assert subscriptions_with_feed_details(qs).get().feed_title == "New name"  # type: ignore[attr-defined]


def test_the_api_opml_export_names_feeds_by_title_in_constant_queries(
    user: Any, api: APIClient, django_assert_max_num_queries: Any
) -> None:
    subscribe(user, "https://a.example/feed")
    FeedCheck.objects.create(
        key_digest=feeds.feed_key_digest("https://a.example/feed"),
        url="https://a.example/feed",
        title='Quotes " & <angles>',
    )
    api.get("/v1/subscriptions.opml")
    with django_assert_max_num_queries(3) as few:
        body = api.get("/v1/subscriptions.opml").content.decode()
    assert (
        'text="Quotes &quot; &amp; &lt;angles&gt;" title="Quotes &quot; &amp; &lt;angles&gt;"'
        in body
    )
    subscription_add_many(
        user=user, entries=[AddEntry(feed_url=f"https://m.example/{n}") for n in range(50)]
    )
    with django_assert_max_num_queries(len(few.captured_queries)):
        body = api.get("/v1/subscriptions.opml").content.decode()
    assert 'text="https://m.example/7" xmlUrl="https://m.example/7"' in body


@pytest.mark.django_db(transaction=True)
def test_without_a_broker_the_check_runs_after_the_answer(
    checks: Any, feed_server: FeedServer, user: Any, api: APIClient
) -> None:
    """As under `make run`: tasks in-process, but a slow feed must not hold the add. The feed
    answers only once the add has answered: were the check in the request, it would never."""
    checks.FEED_CHECK_THREADS = 2
    checks.FEED_FETCH_CONNECT_TIMEOUT = checks.FEED_FETCH_TIMEOUT = 20.0
    answered = threading.Event()
    url = feed_server.url("/slow.xml")

    def after_the_answer(handler: Any) -> None:
        answered.wait(timeout=15)
        handler.send_response(200)
        handler.send_header("Content-Type", "application/rss+xml")
        handler.send_header("Content-Length", str(len(SHOW)))
        handler.end_headers()
        handler.wfile.write(SHOW)

    feed_server.routes["/slow.xml"] = after_the_answer
    started = time.monotonic()
    response = api.post("/v1/subscriptions", {"subscriptions": [{"feed_url": url}]}, format="json")
    took = time.monotonic() - started
    answered.set()
    assert response.status_code == 200
    assert took < 10, f"the add waited {took:.1f} s for the feed"
    services.wait_for_background_checks(timeout=20)
    assert check_of(url).title == "The Big Show & Co"
