"""The pages a person reaches once signed in: what each shows, what each form does, and that
every one is scoped to its owner (another person's object is a 404)."""

import re
import uuid
from typing import Any

import pytest
from django.test import Client

from deletions.models import Deletion
from episodes.models import EpisodeAction
from feedchecks.models import FeedCheck
from gpodder.models import Device, DeviceFeed
from gpodder.selectors import SyncDiagnostics
from gpodder.services import device_touch, subscription_upload
from subscriptions import feeds
from subscriptions.models import Subscription
from tests.episodes.helpers import upload_actions
from tests.helpers import subscribe
from web import selectors

PAGES = ["/podcasts/", "/devices/", "/history/", "/data/", "/account/", "/account/delete/"]


def titled(url: str, title: str, image: str = "") -> None:
    """What a feed check of `url` found."""
    FeedCheck.objects.update_or_create(
        key_digest=feeds.feed_key_digest(url),
        defaults={"url": url, "title": title, "image_url": image, "link": ""},
    )


@pytest.mark.parametrize("path", PAGES)
def test_every_page_asks_a_stranger_to_sign_in(client: Client, path: str, db: None) -> None:
    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"] == f"/login/?next={path}"


def test_the_root_leads_to_the_podcasts_or_to_signing_in(client: Client, page: Client) -> None:
    assert client.get("/")["Location"] == "/login/"
    assert page.get("/")["Location"] == "/podcasts/"


@pytest.mark.parametrize("path", PAGES)
def test_every_page_is_protected_from_framing_and_inline_script(page: Client, path: str) -> None:
    response = page.get(path)
    assert response.status_code == 200
    policy = response["Content-Security-Policy"]
    assert "script-src 'self'" in policy
    assert "frame-ancestors 'none'" in policy
    assert "unsafe-inline" not in policy
    assert response["X-Frame-Options"] == "DENY"
    body = response.content.decode()
    assert re.search(r"<script(?![^>]*\b(?:src=|type=\"application/json\"))", body) is None, (
        "an inline script"
    )
    assert " style=" not in body
    assert "<style" not in body
    assert re.search(r"\son[a-z]+=", body) is None, "an inline event handler"


def test_the_api_answers_carry_no_page_policy(page: Client, person: Any) -> None:
    response = page.get("/v1/capabilities")
    assert "Content-Security-Policy" not in response


def test_podcasts_show_title_artwork_url_status_and_change(page: Client, person: Any) -> None:
    sub = subscribe(person, "https://feeds.example.com/Tech.xml")
    subscribe(person, "https://untitled.example/feed")
    titled(sub.feed_url, "Tech <Weekly> & Friends", "https://img.example/tech.png")

    body = page.get("/podcasts/").content.decode()
    assert "Tech &lt;Weekly&gt; &amp; Friends" in body  # escaped, never markup
    assert 'src="https://img.example/tech.png"' in body
    assert 'referrerpolicy="no-referrer"' in body
    assert "https://untitled.example/feed" in body
    assert "Subscribed" in body
    assert "2 podcasts" in body


def test_search_finds_by_title_or_url_and_filters_by_status(page: Client, person: Any) -> None:
    kept = subscribe(person, "https://a.example/news.xml")
    titled(kept.feed_url, "Morning Café")
    gone = subscribe(person, "https://b.example/sport.xml")
    page.post(f"/podcasts/{gone.guid}/subscription/", {})

    assert "a.example" in page.get("/podcasts/?q=café").content.decode()
    assert "b.example" not in page.get("/podcasts/?q=CAFÉ").content.decode()
    assert "b.example" in page.get("/podcasts/?q=sport&status=not-deleted").content.decode()
    assert "b.example" not in page.get("/podcasts/?q=sport").content.decode()  # subscribed only
    unsubscribed = page.get("/podcasts/?status=unsubscribed").content.decode()
    assert "b.example" in unsubscribed
    assert "a.example" not in unsubscribed
    subscribed = page.get("/podcasts/?status=subscribed").content.decode()
    assert "a.example" in subscribed
    assert "b.example" not in subscribed


@pytest.mark.parametrize(
    "query",
    [
        "q=%00",
        "q=" + "x" * 5000,
        "status=everything",
        "page=abc",
        "page=-1",
        "page=99999999999999999999999",
        "q=%ED%A0%80",
        "q[]=1&status[]=2",
    ],
)
def test_hostile_search_queries_answer_a_page(page: Client, person: Any, query: str) -> None:
    subscribe(person, "https://a.example/news.xml")
    response = page.get(f"/podcasts/?{query}")
    assert response.status_code == 200


def test_a_page_of_5000_podcasts_is_paged_in_a_constant_number_of_queries(
    page: Client, person: Any, django_assert_max_num_queries: Any
) -> None:
    page.get("/podcasts/")  # the session and the user are read the same way every time
    subscribe(person, "https://one.example/feed")
    with django_assert_max_num_queries(5) as few:
        page.get("/podcasts/")
    from subscriptions.services import AddEntry, subscription_add_many

    subscription_add_many(
        user=person,
        entries=[AddEntry(feed_url=f"https://many.example/{n}.xml") for n in range(5000)],
    )
    with django_assert_max_num_queries(len(few.captured_queries)):
        response = page.get("/podcasts/?page=3")
    body = response.content.decode()
    assert "5001 podcasts" in body
    assert "Page 3 of 101" in body
    assert body.count('class="podcast"') == 50


def test_unsubscribe_and_subscribe_again(page: Client, person: Any) -> None:
    sub = subscribe(person, "https://a.example/news.xml")
    response = page.post(f"/podcasts/{sub.guid}/subscription/", {"next": "/podcasts/?q=news"})
    assert response["Location"] == "/podcasts/?q=news"
    sub.refresh_from_db()
    assert sub.is_subscribed is False
    page.post(f"/podcasts/{sub.guid}/subscription/", {"subscribe": "on"})
    sub.refresh_from_db()
    assert sub.is_subscribed is True


def test_a_next_that_leaves_the_site_is_not_followed(page: Client, person: Any) -> None:
    sub = subscribe(person, "https://a.example/news.xml")
    response = page.post(f"/podcasts/{sub.guid}/subscription/", {"next": "https://evil.example/"})
    assert response["Location"] == f"/podcasts/{sub.guid}/"


def test_delete_goes_through_the_deletion_flow_and_shows_its_status(
    page: Client, person: Any, django_capture_on_commit_callbacks: Any
) -> None:
    sub = subscribe(person, "https://a.example/news.xml")
    with django_capture_on_commit_callbacks(execute=True):
        response = page.post(f"/podcasts/{sub.guid}/delete/")
    deletion = Deletion.objects.get(subscription=sub)
    assert response["Location"] == f"/deletions/{deletion.pk}/"
    # The task ran in-process, after the commit: the deletion has ended.
    body = page.get(response["Location"]).content.decode()
    assert "Success" in body
    assert "Subscription deleted successfully" in body
    sub.refresh_from_db()
    assert sub.deleted is not None
    assert "Deleted" in page.get(f"/podcasts/{sub.guid}/").content.decode()


def test_a_pending_deletion_page_updates_itself(page: Client, person: Any) -> None:
    sub = subscribe(person, "https://a.example/news.xml")
    deletion = Deletion.objects.create(
        user=person, subscription=sub, guid=sub.guid, requested=sub.subscription_changed
    )
    body = page.get(f"/deletions/{deletion.pk}/").content.decode()
    assert 'data-refresh="3"' in body
    assert "Pending" in body
    assert "Being deleted" in page.get("/podcasts/").content.decode()


def test_another_persons_objects_are_not_found(page: Client, person: Any, stranger: Any) -> None:
    theirs = subscribe(stranger, "https://theirs.example/feed")
    deletion = Deletion.objects.create(
        user=stranger, subscription=theirs, guid=theirs.guid, requested=theirs.created
    )
    device_touch(user=stranger, device_id="their-phone")
    for response in (
        page.get(f"/podcasts/{theirs.guid}/"),
        page.post(f"/podcasts/{theirs.guid}/subscription/", {}),
        page.post(f"/podcasts/{theirs.guid}/delete/"),
        page.get(f"/deletions/{deletion.pk}/"),
        page.get("/devices/their-phone/"),
        page.post("/devices/their-phone/", {"caption": "mine now", "type": "mobile"}),
        page.post("/devices/their-phone/remove/"),
        page.get(f"/podcasts/{uuid.uuid4()}/"),
        page.get("/deletions/99999999999999999999/"),
    ):
        assert response.status_code == 404
    theirs.refresh_from_db()
    assert theirs.is_subscribed
    assert theirs.deleted is None
    assert Device.objects.get(device_id="their-phone").caption == ""


def test_a_podcast_page_shows_histories_and_recent_episodes(page: Client, person: Any) -> None:
    sub = subscribe(person, "https://a.example/news.xml")
    upload_actions(
        person,
        [
            {
                "podcast": "https://a.example/news.xml",
                "episode": "https://cdn.example/ep%201.mp3",
                "action": "play",
                "device": "phone",
                "timestamp": "2026-11-01T10:00:00",
                "started": 0,
                "position": 125,
                "total": 3725,
            }
        ],
    )
    body = page.get(f"/podcasts/{sub.guid}/").content.decode()
    assert "ep 1.mp3" in body
    assert "Played to 2:05 of 1:02:05" in body
    assert "on phone" in body
    assert str(sub.guid) in body


def test_devices_rename_and_remove_with_what_they_alone_held(page: Client, person: Any) -> None:
    phone = device_touch(user=person, device_id="phone")
    subscription_upload(user=person, device=phone, add=["http://a.example/Feed.xml"], remove=[])
    upload_actions(
        person,
        [
            {
                "podcast": "http://a.example/Feed.xml",
                "episode": "https://e/1.mp3",
                "action": "download",
                "device": "phone",
            }
        ],
    )
    assert "phone" in page.get("/devices/").content.decode()

    response = page.post("/devices/phone/", {"caption": "Téléphone 📱 Alice", "type": "mobile"})
    assert response.status_code == 302
    phone.refresh_from_db()
    assert (phone.caption, phone.type) == ("Téléphone 📱 Alice", "mobile")
    assert "Téléphone 📱 Alice" in page.get("/devices/").content.decode()

    bad = page.post("/devices/phone/", {"caption": "tab\there", "type": "toaster"})
    assert bad.status_code == 200
    assert "control characters" in bad.content.decode()
    assert "Select a valid choice" in bad.content.decode()
    nul = page.post("/devices/phone/", {"caption": "x\x00y", "type": "mobile"})
    assert "Null characters are not allowed" in nul.content.decode()
    phone.refresh_from_db()
    assert phone.type == "mobile"

    asked = page.post("/devices/phone/remove/")  # not from its confirmation: asks first
    assert asked.status_code == 200
    assert Device.objects.filter(pk=phone.pk).exists()
    page.post("/devices/phone/remove/", {"confirmed": "yes"})
    assert not Device.objects.filter(pk=phone.pk).exists()
    assert not DeviceFeed.objects.filter(device_id=phone.pk).exists()
    # The subscription and the listening history stay.
    assert Subscription.objects.filter(user=person, deleted__isnull=True).count() == 1
    assert EpisodeAction.objects.get(user=person).device is None


def test_the_devices_page_pages_by_50_at_the_same_cost_at_1_and_at_many(
    page: Client, person: Any, django_assert_max_num_queries: Any
) -> None:
    def listed(body: str) -> list[str]:
        return re.findall(r'href="/devices/([^/"]+)/"', body)

    page.get("/devices/")  # the session and the user are read the same way every time
    device_touch(user=person, device_id="only")
    with django_assert_max_num_queries(5) as few:
        body = page.get("/devices/").content.decode()
    assert "1 device." in body
    assert listed(body) == ["only"]
    assert 'rel="next"' not in body
    # More than the limit allows: an account may have been over a limit lowered since.
    start = Device.objects.get().last_used
    Device.objects.bulk_create(
        Device(user=person, device_id=f"d{n:03}", created=start, last_used=start)
        for n in range(1, 120)
    )
    with django_assert_max_num_queries(len(few.captured_queries)):
        first = page.get("/devices/").content.decode()
    assert "120 devices." in first
    assert "Page 1 of 3" in first
    assert len(listed(first)) == 50
    assert 'href="?page=2" rel="next"' in first
    with django_assert_max_num_queries(len(few.captured_queries)):
        last = page.get("/devices/?page=3").content.decode()
    assert len(listed(last)) == 20
    assert 'rel="prev"' in last
    assert 'rel="next"' not in last
    # Sorted by last sync, then id: every device on exactly one page.
    shown = listed(first) + listed(page.get("/devices/?page=2").text) + listed(last)
    assert sorted(shown) == sorted(Device.objects.values_list("device_id", flat=True))
    for hostile in ("abc", "-1", "99999999999999999999999", "%00"):
        assert page.get(f"/devices/?page={hostile}").status_code == 200


def test_renaming_a_device_removed_meanwhile_at_the_limit_names_the_limit(
    page: Client, person: Any, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Saving makes the device again when its app's removal came in between; with no room left
    for it, the form says why instead of failing."""
    settings.MAX_DEVICES = 1
    gone = device_touch(user=person, device_id="gone")
    gone.delete()
    device_touch(user=person, device_id="phone")
    monkeypatch.setattr(
        "web.selectors.device_detail",
        lambda **kwargs: selectors.DeviceDetail(device=gone, sync=SyncDiagnostics([])),
    )
    response = page.post("/devices/gone/", {"caption": "Old phone", "type": "mobile"})
    assert response.status_code == 200
    assert "MAX_DEVICES" in response.content.decode()
    assert list(Device.objects.values_list("device_id", flat=True)) == ["phone"]


def test_history_shows_the_latest_of_each_episode_by_podcast(page: Client, person: Any) -> None:
    sub = subscribe(person, "https://a.example/news.xml")
    titled(sub.feed_url, "The News")
    upload_actions(
        person,
        [
            {
                "podcast": "https://a.example/news.xml",
                "episode": "https://e/1.mp3",
                "action": "download",
                "device": "phone",
                "timestamp": "2026-11-01T09:00:00",
            },
            {
                "podcast": "https://a.example/news.xml",
                "episode": "https://e/1.mp3",
                "action": "play",
                "device": "laptop",
                "timestamp": "2026-11-01T10:00:00",
                "started": 0,
                "position": 60,
                "total": 600,
            },
            {
                "podcast": "https://elsewhere.example/x.xml",
                "episode": "https://e/2.mp3",
                "action": "new",
                "timestamp": "2026-11-01T08:00:00",
            },
        ],
    )
    body = page.get("/history/").content.decode()
    assert "The News" in body
    assert "Played to 1:00 of 10:00" in body
    assert "on laptop" in body
    assert "Downloaded" not in body  # the later play of the same episode stands for it
    assert "https://elsewhere.example/x.xml" in body  # no subscription: its URL


def test_every_page_is_a_constant_number_of_queries(
    page: Client, person: Any, django_assert_max_num_queries: Any
) -> None:
    def counts() -> dict[str, int]:
        found = {}
        for path in [*PAGES, f"/podcasts/{first.guid}/", "/devices/d0/"]:
            with django_assert_max_num_queries(20) as queries:
                assert page.get(path).status_code == 200, path
            found[path] = len(queries.captured_queries)
        return found

    first = subscribe(person, "https://a.example/0.xml")
    device_touch(user=person, device_id="d0")
    upload_actions(
        person, [{"podcast": "https://a.example/0.xml", "episode": "https://e/0", "action": "new"}]
    )
    few = counts()
    for n in range(1, 60):
        subscribe(person, f"https://a.example/{n}.xml")
        device_touch(user=person, device_id=f"d{n}")
    upload_actions(
        person,
        [
            {"podcast": "https://a.example/0.xml", "episode": f"https://e/{n}", "action": "new"}
            for n in range(100)
        ],
    )
    assert counts() == few


@pytest.mark.parametrize("path", ["/login/", "/podcasts/"])
def test_every_page_names_the_server_version_in_its_footer(page: Client, path: str) -> None:
    """pyproject.toml's, the one a self-hoster also reads in /health and /v1/capabilities."""
    from core import version

    client = page if path != "/login/" else Client()
    body = client.get(path).content.decode()

    footer = body[body.index('<footer class="bottom">') :]
    assert f"{version.NAME} {version.VERSION}" in footer
    assert version.VERSION != version.UNKNOWN


@pytest.mark.parametrize("path", ["/login/", "/podcasts/", "/history/", "/connect/"])
def test_the_footer_is_short_and_leads_to_connect_and_the_api_documentation(
    page: Client, path: str
) -> None:
    """The APIs' paths are on the Connect page (and in docs/), not under every page."""
    client = page if path != "/login/" else Client()
    body = client.get(path).content.decode()
    footer = body[body.index('<footer class="bottom">') : body.index("</footer>")]
    assert re.findall(r'href="([^"]+)"', footer) == ["/connect/", "/v1/docs/"]
    assert "Connect an app" in footer
    assert "API documentation" in footer
    for path_named in ("/api/2/", "gpoddersync", "<code>"):
        assert path_named not in footer


def test_a_page_write_racing_a_deactivation_signs_out_instead_of_failing(
    page: Client, person: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Signed in when the request began, deactivated before its write: the write's lock
    refuses the account, and the page signs the browser out (never a 500)."""
    from subscriptions.models import Subscription
    from tests.helpers import subscribe
    from web.views import podcasts as views

    sub = subscribe(person, "https://race.example/feed.xml")
    real = views.subscription_update

    def deactivated_first(**kwargs: Any) -> Any:
        type(person).objects.filter(pk=person.pk).update(is_active=False)
        return real(**kwargs)

    monkeypatch.setattr(views, "subscription_update", deactivated_first)
    response = page.post(f"/podcasts/{sub.guid}/subscription/", {"is_subscribed": "false"})
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")
    assert Subscription.objects.get(pk=sub.pk).is_subscribed is True
    assert page.get("/podcasts/").status_code == 302  # signed out
