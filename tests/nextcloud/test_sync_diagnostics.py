"""What each device last did, on the Nextcloud paths (docs/nextcloud.md): each of the four data
paths notes one event on the request's device (one per app password, `nextcloud` for the
account's own password), in one statement more than the request made without it."""

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from gpodder.models import DeviceSyncEvent
from nextcloud.services import device_id_for
from tests.nextcloud.helpers import APP, app_password, body, nextcloud_client

ANTENNAPOD = "AntennaPod/3.8.0"
FEED = "https://feeds.example/show.xml"


def play(n: int, **fields: Any) -> dict[str, Any]:
    return {
        "podcast": FEED,
        "episode": f"https://cdn.example/{n}.mp3",
        "guid": "null",
        "action": "PLAY",
        "timestamp": "2026-11-01T10:30:00",
        "started": 0,
        "position": n,
        "total": 600,
        **fields,
    }


def events(device_id: str = "nextcloud") -> list[DeviceSyncEvent]:
    return list(DeviceSyncEvent.objects.filter(device__device_id=device_id).order_by("-seq"))


def latest(device_id: str = "nextcloud") -> DeviceSyncEvent:
    return events(device_id)[0]


@pytest.fixture
def phone(alice: Any) -> APIClient:
    """AntennaPod in Nextcloud mode, on alice's own password."""
    client = nextcloud_client("alice")
    client.defaults["HTTP_USER_AGENT"] = ANTENNAPOD
    return client


def test_each_data_path_notes_what_it_moved_on_the_requests_device(phone, alice):
    changed = phone.post(
        f"{APP}/subscription_change/create",
        {"add": [FEED, "itms-services://x"], "remove": []},
        format="json",
    )
    assert changed.status_code == 200
    upload = latest()
    assert (upload.kind, upload.data, upload.protocol) == ("upload", "subscriptions", "nextcloud")
    assert (upload.count, upload.refused, upload.detail) == (
        1,
        1,
        "1 subscription change (1 added, 0 removed)",
    )
    assert upload.agent == ANTENNAPOD

    assert phone.get(f"{APP}/subscriptions", {"since": 0}).status_code == 200
    pull = latest()
    assert (pull.kind, pull.data, pull.count, pull.detail) == (
        "pull",
        "subscriptions",
        1,
        "1 subscription change (1 subscribed, 0 unsubscribed)",
    )

    created = phone.post(f"{APP}/episode_action/create", [play(1), play(2)], format="json")
    assert created.status_code == 200
    uploaded = latest()
    assert (uploaded.kind, uploaded.data, uploaded.count) == ("upload", "episode_actions", 2)

    answer = phone.get(f"{APP}/episode_action", {"since": 0})
    assert len(body(answer)["actions"]) == 2
    downloaded = latest()
    assert (downloaded.kind, downloaded.data, downloaded.count) == ("pull", "episode_actions", 2)
    assert downloaded.detail == "2 episode actions"
    assert len(events()) == 4


def test_an_app_password_syncs_as_its_own_device(alice):
    _, secret = app_password(alice, "AntennaPod on my phone")
    app = nextcloud_client("alice", secret)
    assert app.get(f"{APP}/subscriptions", {"since": 0}).status_code == 200
    device = device_id_for("AntennaPod on my phone")
    assert [e.kind for e in events(device)] == ["pull"]
    assert events() == []


def test_a_refused_upload_is_noted_with_its_reason(phone, alice):
    phone.get(f"{APP}/subscriptions", {"since": 0})  # the device is made
    bad = [play(1), play(2, timestamp="31/12/2026")]
    assert phone.post(f"{APP}/episode_action/create", bad, format="json").status_code == 400
    refusal = latest()
    assert (refusal.kind, refusal.data, refusal.refused) == ("refusal", "episode_actions", 2)
    assert refusal.detail == "an upload of 2 episode actions"
    assert refusal.reason.startswith("action 1: timestamp must be an ISO 8601 time")

    assert phone.get(f"{APP}/episode_action", {"since": "-1"}).status_code == 400
    assert (latest().kind, latest().detail) == ("refusal", "a pull of episode actions")
    assert latest().reason.startswith("since must be whole seconds")


def test_a_request_of_a_revoked_app_password_notes_nothing(alice):
    from accounts.services import app_password_revoke

    password_id, secret = app_password(alice, "Kasts")
    app = nextcloud_client("alice", secret)
    app.get(f"{APP}/subscriptions", {"since": 0})
    app_password_revoke(user=alice, app_password_id=password_id)
    noted = DeviceSyncEvent.objects.count()
    assert app.get(f"{APP}/subscriptions", {"since": "x"}).status_code == 401
    assert DeviceSyncEvent.objects.count() == noted


def statements(request: Callable[[], Any]) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = request()
        body(response)
    assert response.status_code == 200, response.content
    return len(captured.captured_queries)


REQUESTS: dict[str, Callable[[APIClient], Any]] = {
    "subscription pull": lambda app: app.get(f"{APP}/subscriptions", {"since": 0}),
    "subscription upload": lambda app: app.post(
        f"{APP}/subscription_change/create", {"add": [FEED], "remove": []}, format="json"
    ),
    "episode upload": lambda app: app.post(
        f"{APP}/episode_action/create", [play(1)], format="json"
    ),
    "episode download": lambda app: app.get(f"{APP}/episode_action", {"since": 0}),
}


@pytest.mark.parametrize("name", list(REQUESTS))
def test_a_sync_request_makes_one_statement_more_at_most(
    phone, alice, clock, settings, django_assert_max_num_queries, name
):
    request = REQUESTS[name]
    for _ in range(2):  # the device made, the app's credentials known: the same work from now on
        request(phone)
    settings.DEVICE_SYNC_EVENTS = False
    without = statements(lambda: request(phone))
    settings.DEVICE_SYNC_EVENTS = True
    noted = latest().seq
    with django_assert_max_num_queries(without + 1):
        statements(lambda: request(phone))
    assert statements(lambda: request(phone)) == without + 1
    assert latest().seq == noted + 2
