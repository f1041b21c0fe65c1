"""A device's page tells what its last syncs did ("Why didn't my phone get that change?"), the
devices list names each device's app, and removing a device or revoking an app password in use
asks first (docs/web.md, "Devices" and "Account and app passwords")."""

import html
import json
import re
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from accounts.models import AppPassword
from accounts.services import app_password_create
from gpodder import diagnostics
from gpodder.models import SYNC_EVENTS_KEPT, Device, DeviceSyncEvent
from gpodder.services import device_touch
from nextcloud.services import app_device_ids, device_id_for
from tests.helpers import basic
from tests.web.helpers import PASSWORD

FEED = "https://feeds.example/show.xml"
SUBSCRIPTIONS = "/api/2/subscriptions/alice/phone.json"
EPISODES = "/api/2/episodes/alice.json"


@pytest.fixture(autouse=True)
def _forget_app_devices() -> Any:
    app_device_ids.clear()
    yield
    app_device_ids.clear()


def antennapod(username: str = "alice") -> APIClient:
    app = APIClient(HTTP_USER_AGENT="AntennaPod/3.5.0")
    app.credentials(HTTP_AUTHORIZATION=basic(username, PASSWORD))
    return app


def play(n: int, **fields: Any) -> dict[str, Any]:
    return {
        "podcast": FEED,
        "episode": f"https://cdn.example/{n}.mp3",
        "action": "play",
        "device": "phone",
        "timestamp": "2026-11-01T10:30:00",
        "position": n,
        **fields,
    }


def exported(page: Client) -> Any:
    """The JSON download, read whole."""
    response: Any = page.get("/data/everything.json")
    return json.loads(b"".join(response.streaming_content))


def ok(response: Any) -> None:
    assert response.status_code < 400, response.content


def text(response: Any) -> str:
    """The page's words, tags and runs of spaces out."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", response.content.decode())).split())


def synced(app: APIClient) -> None:
    """A sync as AntennaPod makes it: subscriptions up and down, episode actions up and down;
    then an upload of which one action is refused."""
    ok(app.post(SUBSCRIPTIONS, {"add": [FEED, "ftp://x.example/f"]}, format="json"))
    ok(app.get(SUBSCRIPTIONS, {"since": 0}))
    ok(app.post(EPISODES, [play(n) for n in range(12)], format="json"))
    ok(app.get(EPISODES, {"since": 0}))
    bad = [play(20), play(21, timestamp="yesterday")]
    assert app.post(EPISODES, bad, format="json").status_code == 400


def test_a_devices_page_tells_what_its_last_syncs_did(page: Client, person: Any) -> None:
    synced(antennapod())
    body = text(page.get("/devices/phone/"))
    assert "App AntennaPod 3.5.0" in body
    assert "Protocol gpodder.net API" in body
    assert "Last pull" in body
    assert "Last upload" in body
    assert body.count("UTC : 12 episode actions") == 2
    assert "Its last sync sent it 1 subscription change, 12 episode actions" in body
    assert "Last refusal" in body
    assert "2 episode actions refused: action 1: timestamp must be an ISO 8601 time" in body
    assert "Its last 5 sync requests, the latest first" in body
    assert "Refused: an upload of 2 episode actions" in body
    assert "Upload of subscriptions" in body
    assert (
        "1 subscription change (1 added, 0 removed); 1 URL refused: not usable as a feed's "
        "address, like ftp://x.example/f" in body
    )
    assert "Pull of subscriptions" in body
    assert "1 subscription change (1 subscribed, 0 unsubscribed)" in body
    assert f"keeps the last {SYNC_EVENTS_KEPT} sync requests of each device" in body

    listing = text(page.get("/devices/"))
    assert "AntennaPod 3.5.0, gpodder.net API" in listing


def test_a_device_that_never_synced_says_so(page: Client, person: Any) -> None:
    device_touch(user=person, device_id="quiet")
    body = text(page.get("/devices/quiet/"))
    assert "Nothing kept yet" in body
    assert "Last refusal" not in body
    listing = text(page.get("/devices/"))
    assert "UTC , " not in listing
    assert "AntennaPod" not in listing


def test_a_nextcloud_device_names_its_protocol(page: Client, person: Any) -> None:
    app = APIClient(HTTP_USER_AGENT="AntennaPod/3.8.0")
    _, secret = app_password_create(user=person, name="AntennaPod on my phone")
    app.credentials(HTTP_AUTHORIZATION=basic("alice", secret))
    ok(app.get("/index.php/apps/gpoddersync/subscriptions", {"since": 0}))
    device = device_id_for("AntennaPod on my phone")
    body = text(page.get(f"/devices/{device}/"))
    assert "App AntennaPod 3.8.0" in body
    assert "Protocol Nextcloud API" in body
    assert "Last refusal none" in body


def test_an_agent_the_page_cannot_read_is_shown_as_sent(page: Client, person: Any) -> None:
    device_touch(user=person, device_id="phone")
    agent = "<script>alert(1)</script> Téléphone 📱"
    diagnostics.sync_note_record(
        user_id=person.pk,
        protocol="gpodder",
        agent=agent,
        session_key=None,
        notes={"phone": diagnostics.subscriptions_pulled(added=0, removed=0)},
    )
    shown = page.get("/devices/phone/").content.decode()
    assert "<script>alert" not in shown
    assert "&lt;script&gt;alert(1)&lt;/script&gt; Téléphone 📱" in shown


def test_another_persons_device_and_its_events_are_not_found(
    page: Client, person: Any, stranger: Any
) -> None:
    app = APIClient(HTTP_USER_AGENT="AntennaPod/3.5.0")
    app.credentials(HTTP_AUTHORIZATION=basic("mallory", PASSWORD))
    ok(app.get("/api/2/subscriptions/mallory/theirs.json", {"since": 0}))
    for response in (
        page.get("/devices/theirs/"),
        page.get("/devices/theirs/remove/"),
        page.post("/devices/theirs/remove/", {"confirmed": "yes"}),
        page.get("/devices/nowhere/"),
    ):
        assert response.status_code == 404
    assert Device.objects.filter(device_id="theirs").exists()
    assert "theirs" not in page.get("/devices/").content.decode()
    export = exported(page)
    assert export["devices"] == []


def _note(person: Any, device: str, n: int) -> None:
    diagnostics.sync_note_record(
        user_id=person.pk,
        protocol="gpodder",
        agent=f"AntennaPod/3.{n}",
        session_key=None,
        notes={device: diagnostics.actions_downloaded(n)},
    )


def test_the_pages_cost_the_same_with_one_event_and_with_many(
    page: Client, person: Any, django_assert_max_num_queries: Any
) -> None:
    device_touch(user=person, device_id="phone")
    _note(person, "phone", 1)
    page.get("/devices/phone/")  # the session and the user are read the same way every time
    with CaptureQueriesContext(connection) as few:
        page.get("/devices/phone/")
        page.get("/devices/")
    for n in range(2, SYNC_EVENTS_KEPT + 5):
        _note(person, "phone", n)
    for n in range(60):
        device_touch(user=person, device_id=f"d{n:02}")
        _note(person, f"d{n:02}", n)
    with django_assert_max_num_queries(len(few.captured_queries)):
        body = text(page.get("/devices/phone/"))
        listing = text(page.get("/devices/"))
    assert f"Its last {SYNC_EVENTS_KEPT} sync requests" in body
    assert "AntennaPod 3.24" in body
    assert len(re.findall(r"AntennaPod 3\.\d+, gpodder\.net API", listing)) == 50


# --- removing a device asks first ----------------------------------------------------------------


def test_removing_a_device_that_sent_nothing_counts_no_zeros(page: Client, person: Any) -> None:
    device_touch(user=person, device_id="quiet")
    asked = text(page.get("/devices/quiet/remove/"))
    assert "Remove this device?" in asked
    assert "forgets what its last syncs did" in asked
    assert "changes nothing in your listening history: this device has told of no episode" in asked
    assert " 0 " not in f" {asked} "
    assert "feed address" not in asked


def test_removing_a_device_asks_first_naming_what_goes_and_what_stays(
    page: Client, person: Any
) -> None:
    synced(antennapod())
    assert 'href="/devices/phone/remove/"' in page.get("/devices/phone/").content.decode()
    asked = text(page.get("/devices/phone/remove/"))
    assert "Remove this device?" in asked
    assert "forgets how this device spelled 1 feed address" in asked
    assert "keeps its 12 episode actions in your listening history" in asked
    assert "If the app syncs again, it comes back as a new device" in asked

    assert "changes nothing in your listening history" not in asked

    # A POST that did not come from the confirmation asks again, and removes nothing.
    again = page.post("/devices/phone/remove/")
    assert again.status_code == 200
    assert "Remove this device?" in text(again)
    assert Device.objects.filter(device_id="phone").exists()

    done = page.post("/devices/phone/remove/", {"confirmed": "yes"})
    assert done.status_code == 302
    assert done["Location"] == "/devices/"
    assert not Device.objects.filter(device_id="phone").exists()
    assert not DeviceSyncEvent.objects.exists()
    assert "Device phone removed" in text(page.get("/devices/"))


def test_a_device_removed_already_is_told_in_words(page: Client, person: Any) -> None:
    device_touch(user=person, device_id="phone")
    assert page.post("/devices/phone/remove/", {"confirmed": "yes"}).status_code == 302
    for response in (
        page.post("/devices/phone/remove/", {"confirmed": "yes"}),
        page.get("/devices/phone/remove/"),
    ):
        assert response.status_code == 404
        assert "The device phone is not among your devices: it was removed already" in text(
            response
        )


# --- revoking an app password in use asks first ---------------------------------------------------


def _used(person: Any, name: str) -> tuple[AppPassword, str]:
    made, secret = app_password_create(user=person, name=name)
    app = APIClient(HTTP_USER_AGENT="Kasts/23.08")
    app.credentials(HTTP_AUTHORIZATION=basic("alice", secret))
    ok(app.get("/index.php/apps/gpoddersync/subscriptions", {"since": 0}))
    made.refresh_from_db()
    assert made.last_used is not None
    return made, secret


def test_an_app_password_never_used_is_revoked_at_once(page: Client, person: Any) -> None:
    made, _ = app_password_create(user=person, name="spare")
    account = page.get("/account/").content.decode()
    assert f'<form method="post" action="/account/app-passwords/{made.pk}/revoke/">' in account
    response = page.post(f"/account/app-passwords/{made.pk}/revoke/")
    assert response.status_code == 302
    assert not AppPassword.objects.filter(pk=made.pk).exists()


def test_revoking_an_app_password_in_use_asks_first(page: Client, person: Any) -> None:
    made, secret = _used(person, "Kasts on the laptop")
    path = f"/account/app-passwords/{made.pk}/revoke/"
    account = page.get("/account/").content.decode()
    assert f'<a href="{path}">Revoke…' in account

    asked = page.get(path)
    assert asked["Cache-Control"].startswith("max-age=0") or "no-store" in asked["Cache-Control"]
    words = text(asked)
    assert "Revoke this app password?" in words
    assert "Kasts on the laptop" in words
    assert "signs out, at once and everywhere, the app that uses it" in words
    device = device_id_for("Kasts on the laptop")
    assert f'href="/devices/{device}/"' in asked.content.decode()

    # Straight from a stale account page, or another site's form: it asks first.
    again = page.post(path)
    assert again.status_code == 200
    assert "Revoke this app password?" in text(again)
    assert AppPassword.objects.filter(pk=made.pk).exists()

    done = page.post(path, {"confirmed": "yes"})
    assert done.status_code == 302
    assert not AppPassword.objects.filter(pk=made.pk).exists()
    assert "“Kasts on the laptop” is revoked" in text(page.get("/account/"))
    app = APIClient()
    app.credentials(HTTP_AUTHORIZATION=basic("alice", secret))
    assert app.get("/index.php/apps/gpoddersync/subscriptions").status_code == 401
    # Its device stays, with what it last did.
    assert Device.objects.filter(device_id=device).exists()


def test_an_app_password_revoked_already_or_anothers_is_told_in_words(
    page: Client, person: Any, stranger: Any
) -> None:
    made, _ = _used(person, "Kasts")
    ok(page.post(f"/account/app-passwords/{made.pk}/revoke/", {"confirmed": "yes"}))
    theirs, _ = app_password_create(user=stranger, name="theirs")
    for app_password_id in (made.pk, theirs.pk, 99999999):
        path = f"/account/app-passwords/{app_password_id}/revoke/"
        for response in (page.get(path), page.post(path, {"confirmed": "yes"})):
            assert response.status_code == 404
            assert "This app password is not among yours: it was revoked already." in text(response)
    assert AppPassword.objects.filter(pk=theirs.pk).exists()


# --- the export and the admin ------------------------------------------------------------------


def test_the_export_holds_each_devices_events(page: Client, person: Any) -> None:
    synced(antennapod())
    export = exported(page)
    [phone] = export["devices"]
    kept = phone["sync_events"]
    assert [e["kind"] for e in kept] == ["refusal", "pull", "upload", "pull", "upload"]
    assert kept[0]["refused"] == 2
    assert kept[0]["reason"].startswith("action 1: timestamp must be")
    assert kept[1] == {
        "at": kept[1]["at"],
        "kind": "pull",
        "data": "episode_actions",
        "protocol": "gpodder",
        "user_agent": "AntennaPod/3.5.0",
        "count": 12,
        "refused": 0,
        "reason": "",
        "detail": "12 episode actions",
    }


def test_staff_see_a_devices_events_and_change_none(admin_client: Client, person: Any) -> None:
    synced(antennapod())
    device = Device.objects.get(device_id="phone")
    change = admin_client.get(f"/admin/gpodder/device/{device.pk}/change/")
    assert change.status_code == 200
    shown = change.content.decode()
    assert "Last sync events" in shown
    assert "AntennaPod/3.5.0" in shown
    assert "timestamp must be an ISO 8601 time" in shown
    assert 'name="sync_events-0-DELETE"' not in shown
