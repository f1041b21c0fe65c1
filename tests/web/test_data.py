"""Your data: an OPML file's import told feed by feed, the OPML export with titles, and the one
JSON file of everything."""

import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from feedchecks.models import FeedCheck
from gpodder.services import device_touch, device_update, subscription_upload
from subscriptions import feeds
from subscriptions.models import Subscription
from subscriptions.services import SubscriptionUpdate, subscription_update
from tests.episodes.helpers import upload_actions
from tests.helpers import billion_laughs, subscribe


def opml_file(*urls: str, name: str = "apps.opml") -> SimpleUploadedFile:
    outlines = "".join(f'<outline type="rss" text="t" xmlUrl="{url}"/>' for url in urls)
    document = f'<?xml version="1.0"?><opml version="2.0"><head/><body>{outlines}</body></opml>'
    return SimpleUploadedFile(name, document.encode(), content_type="text/x-opml")


def test_an_import_tells_what_was_added_already_there_and_failed(page: Client, person: Any) -> None:
    subscribe(person, "https://known.example/feed.xml")
    response = page.post(
        "/data/import/",
        {
            "file": opml_file(
                "https://new.example/a.xml",
                "https://known.example/feed.xml",
                "https://new.example/a.xml",  # twice in the file
                "ftp://wrong.example/feed",
                "not a url",
            )
        },
    )
    assert response.status_code == 200
    body = response.content.decode()
    assert (
        "<strong>1</strong> added, <strong>2</strong> already there, <strong>2</strong> failed"
        in body
    )
    assert "ftp://wrong.example/feed" in body
    assert Subscription.objects.filter(user=person).count() == 2


def test_an_unsubscribed_feed_in_the_file_is_subscribed_again(page: Client, person: Any) -> None:
    sub = subscribe(person, "https://known.example/feed.xml")
    subscription_update(user=person, guid=sub.guid, change=SubscriptionUpdate(is_subscribed=False))
    body = page.post(
        "/data/import/", {"file": opml_file("https://known.example/feed.xml")}
    ).content.decode()
    assert "<strong>1</strong> added, <strong>0</strong> already there" in body
    sub.refresh_from_db()
    assert sub.is_subscribed


@pytest.mark.parametrize(
    ("content", "told"),
    [
        (b"", "The submitted file is empty"),
        (b"not xml at all", "not well-formed XML"),
        (b"<html><body/></html>", "not an OPML document"),
        (billion_laughs("<opml><body>&lol9;</body></opml>"), "must not contain a DTD"),
        (b"\xff\xfe\x00garbage", "could not be read"),
    ],
)
def test_a_file_that_is_not_opml_is_refused_with_its_reason(
    page: Client, person: Any, content: bytes, told: str
) -> None:
    response = page.post("/data/import/", {"file": SimpleUploadedFile("x.opml", content)})
    assert response.status_code == 400
    assert told in response.content.decode()
    assert not Subscription.objects.filter(user=person).exists()


def test_a_file_over_the_size_limit_is_refused_naming_it(
    page: Client, person: Any, settings: Any
) -> None:
    settings.MAX_BODY_BYTES = 1000
    response = page.post(
        "/data/import/", {"file": opml_file(*[f"https://a.example/{n}" for n in range(50)])}
    )
    assert response.status_code == 400
    assert "MAX_BODY_BYTES" in response.content.decode()


def test_a_file_over_the_feed_limit_is_refused_naming_it(
    page: Client, person: Any, settings: Any
) -> None:
    settings.MAX_OPML_ENTRIES = 3
    response = page.post(
        "/data/import/", {"file": opml_file(*[f"https://a.example/{n}" for n in range(4)])}
    )
    assert response.status_code == 400
    assert "MAX_OPML_ENTRIES" in response.content.decode()
    assert not Subscription.objects.filter(user=person).exists()


def test_an_import_without_a_file_names_the_field(page: Client, person: Any) -> None:
    response = page.post("/data/import/", {})
    assert response.status_code == 400
    assert "This field is required" in response.content.decode()


def test_the_opml_export_names_feeds_by_their_titles(page: Client, person: Any) -> None:
    titled = subscribe(person, "https://a.example/feed.xml")
    subscribe(person, "https://b.example/feed.xml")
    FeedCheck.objects.create(
        key_digest=feeds.feed_key_digest(titled.feed_url), url=titled.feed_url, title="Café & Co"
    )
    response = page.get("/data/subscriptions.opml")
    assert response["Content-Type"].startswith("text/x-opml")
    body = response.content.decode()
    assert 'text="Café &amp; Co" title="Café &amp; Co" xmlUrl="https://a.example/feed.xml"' in body
    assert 'text="https://b.example/feed.xml" xmlUrl="https://b.example/feed.xml"' in body


def test_everything_is_one_json_file(page: Client, person: Any, stranger: Any) -> None:
    sub = subscribe(person, "https://a.example/old.xml")
    subscription_update(
        user=person,
        guid=sub.guid,
        change=SubscriptionUpdate(new_feed_url="https://a.example/new.xml"),
    )
    phone = device_touch(user=person, device_id="phone")
    device_update(user=person, device_id="phone", caption="Phone", type="mobile")
    subscription_upload(user=person, device=phone, add=["https://b.example/x.xml"], remove=[])
    upload_actions(
        person,
        [
            {
                "podcast": "https://a.example/new.xml",
                "episode": "https://e/1.mp3",
                "action": "play",
                "device": "phone",
                "timestamp": "2026-11-01T10:00:00",
                "started": 1,
                "position": 2,
                "total": 3,
                "guid": "g-1",
            }
        ],
    )
    subscribe(stranger, "https://theirs.example/feed")

    response = page.get("/data/everything.json")
    assert response["Content-Disposition"].startswith("attachment")
    data = json.loads(b"".join(response.streaming_content))  # type: ignore[attr-defined]
    assert data["account"]["username"] == "alice"
    urls = {s["feed_url"] for s in data["subscriptions"]}
    assert urls == {"https://a.example/new.xml", "https://b.example/x.xml"}
    moved = next(s for s in data["subscriptions"] if s["feed_url"].endswith("new.xml"))
    assert [f["url"] for f in moved["feed_url_history"]] == [
        "https://a.example/old.xml",
        "https://a.example/new.xml",
    ]
    assert moved["guid_history"][0]["guid"] == str(sub.guid)
    assert data["devices"][0]["id"] == "phone"
    assert data["devices"][0]["type"] == "mobile"
    assert data["devices"][0]["feed_url_spellings"][0]["url"] == "https://b.example/x.xml"
    (action,) = data["episode_actions"]
    assert action == {
        "podcast": "https://a.example/new.xml",
        "episode": "https://e/1.mp3",
        "action": "play",
        "timestamp": "2026-11-01T10:00:00.000Z",
        "received": action["received"],
        "device": "phone",
        "guid": "g-1",
        "started": 1,
        "position": 2,
        "total": 3,
    }


def test_everything_streams_a_long_history_in_a_constant_number_of_queries(
    page: Client, person: Any, django_assert_max_num_queries: Any
) -> None:
    def export() -> dict[str, Any]:
        response: Any = page.get("/data/everything.json")
        return json.loads(b"".join(response.streaming_content))

    export()
    subscribe(person, "https://a.example/0.xml")
    with django_assert_max_num_queries(12) as few:
        export()
    for n in range(1, 30):
        subscribe(person, f"https://a.example/{n}.xml")
        device_touch(user=person, device_id=f"d{n}")
    upload_actions(
        person,
        [
            {
                "podcast": f"https://a.example/{n % 30}.xml",
                "episode": f"https://e/{n}",
                "action": "download",
            }
            for n in range(5000)
        ],
    )
    with django_assert_max_num_queries(len(few.captured_queries) + 3):
        data = export()  # + the iterator's further chunks of 2,000 actions
    assert len(data["episode_actions"]) == 5000
