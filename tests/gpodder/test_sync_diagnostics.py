"""What each device last did, on the gpodder API (docs/gpodder-api.md, "What each device last
did"): every sync request notes one event on its device, with what it pulled or uploaded, how
many, and what was refused and why; a device keeps its last SYNC_EVENTS_KEPT; the note is one
statement more than the request made without it, and never fails the sync."""

import logging
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
from django.db import DatabaseError, connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from core.db import later, sql
from gpodder import diagnostics
from gpodder.models import SYNC_EVENTS_KEPT, Device, DeviceSyncEvent
from gpodder.services import device_touch
from tests.helpers import basic

ANTENNAPOD = "AntennaPod/3.5.0"
FEED = "https://feeds.example/show.xml"
OTHER = "https://feeds.example/other.xml"
SUBSCRIPTIONS = "/api/2/subscriptions/alice/phone.json"
EPISODES = "/api/2/episodes/alice.json"


def play(n: int, device: str | None = "phone", **fields: Any) -> dict[str, Any]:
    action = {
        "podcast": FEED,
        "episode": f"https://cdn.example/{n}.mp3",
        "action": "play",
        "timestamp": "2026-11-01T10:30:00",
        "position": n,
        **fields,
    }
    if device is not None:
        action["device"] = device
    return action


def events(device_id: str = "phone") -> list[DeviceSyncEvent]:
    """The device's kept events, the latest first."""
    return list(DeviceSyncEvent.objects.filter(device__device_id=device_id).order_by("-seq"))


def latest(device_id: str = "phone") -> DeviceSyncEvent:
    return events(device_id)[0]


@pytest.fixture
def phone(alice: Any) -> APIClient:
    """AntennaPod on alice's phone: Basic on every request."""
    client = APIClient(HTTP_USER_AGENT=ANTENNAPOD)
    client.credentials(HTTP_AUTHORIZATION=basic("alice"))
    return client


def test_a_subscription_upload_notes_what_was_taken_and_what_was_left_out(phone, clock):
    response = phone.post(
        SUBSCRIPTIONS, {"add": [FEED, OTHER, "ftp://files.example/x"], "remove": []}, format="json"
    )
    assert response.status_code == 200
    [event] = events()
    assert (event.kind, event.data, event.protocol) == ("upload", "subscriptions", "gpodder")
    assert (event.count, event.refused) == (2, 1)
    assert event.detail == "2 subscription changes (2 added, 0 removed)"
    assert event.reason == "not usable as a feed's address, like ftp://files.example/x"
    assert event.agent == ANTENNAPOD
    assert event.at == clock.now


def test_a_subscription_pull_notes_what_it_sent(phone, alice):
    phone.post(SUBSCRIPTIONS, {"add": [FEED, OTHER], "remove": []}, format="json")
    phone.post(SUBSCRIPTIONS, {"add": [], "remove": [OTHER]}, format="json")
    assert phone.get(SUBSCRIPTIONS, {"since": 0}).status_code == 200
    event = latest()
    assert (event.kind, event.data, event.count) == ("pull", "subscriptions", 2)
    assert event.detail == "2 subscription changes (1 subscribed, 1 unsubscribed)"
    assert event.refused == 0


def test_the_simple_api_notes_the_whole_list_on_the_device_it_names(phone, alice):
    put = phone.put(
        "/subscriptions/alice/tablet.txt",
        f"{FEED}\n{OTHER}\nmailto:nobody\n",
        content_type="text/plain",
    )
    assert put.status_code == 200
    upload = latest("tablet")
    assert (upload.kind, upload.count, upload.refused) == ("upload", 2, 1)
    assert upload.detail == "the whole list: 2 feeds"
    assert "mailto:nobody" in upload.reason

    assert phone.get("/subscriptions/alice/tablet.json").status_code == 200
    pull = latest("tablet")
    assert (pull.kind, pull.count, pull.detail) == ("pull", 2, "the whole list: 2 feeds")
    # The user's list names no device: nothing is noted.
    before = DeviceSyncEvent.objects.count()
    assert phone.get("/subscriptions/alice.json").status_code == 200
    assert DeviceSyncEvent.objects.count() == before


def test_an_episode_upload_notes_each_device_its_actions_name(phone, alice):
    actions = [play(1), play(2), play(3, device="laptop"), play(4, episode=" ")]
    response = phone.post(EPISODES, actions, format="json")
    assert response.status_code == 200
    mine = latest("phone")
    assert (mine.kind, mine.data, mine.count, mine.refused) == ("upload", "episode_actions", 2, 1)
    assert mine.detail == "2 episode actions"
    assert mine.reason.startswith("a podcast or episode URL that cannot be used")
    laptop = latest("laptop")
    assert (laptop.count, laptop.refused, laptop.reason) == (1, 0, "")


def test_episode_requests_that_name_no_device_are_noted_on_the_same_apps(phone, alice, clock):
    """A download names no device, nor do the actions of some apps: the device the same app
    (its User-Agent) synced last within the hour takes them."""
    phone.get(SUBSCRIPTIONS, {"since": 0})  # the sync's first request names the phone
    tablet = APIClient(HTTP_USER_AGENT="Kasts/23.08")
    tablet.credentials(HTTP_AUTHORIZATION=basic("alice"))
    tablet.get("/api/2/subscriptions/alice/tablet.json", {"since": 0})
    clock.advance(seconds=5)

    assert phone.post(EPISODES, [play(1, device=None)], format="json").status_code == 200
    assert (latest().kind, latest().data, latest().count) == ("upload", "episode_actions", 1)
    answer = phone.get(EPISODES, {"since": 0})
    assert len(answer.json()["actions"]) == 1
    assert (latest().kind, latest().data, latest().count) == ("pull", "episode_actions", 1)
    assert latest().detail == "1 episode action"
    assert [e.kind for e in events("tablet")] == ["pull"]

    # Another app, or the same one over an hour later, is not taken for the phone.
    stranger = APIClient(HTTP_USER_AGENT="Podcatcher/1.0")
    stranger.credentials(HTTP_AUTHORIZATION=basic("alice"))
    noted = DeviceSyncEvent.objects.count()
    assert stranger.get(EPISODES, {"since": 0}).status_code == 200
    clock.advance(hours=2)
    assert phone.get(EPISODES, {"since": 0}).status_code == 200
    assert DeviceSyncEvent.objects.count() == noted


def test_two_installs_of_the_same_app_are_told_apart_by_their_sessions(alice, clock):
    """Two phones with the same AntennaPod, each on its session cookie: a download is noted on
    the phone that made it, not on the one that synced last."""

    def installed() -> APIClient:
        app = APIClient(HTTP_USER_AGENT=ANTENNAPOD)
        login = app.post("/api/2/auth/alice/login.json", HTTP_AUTHORIZATION=basic("alice"))
        assert login.status_code == 200
        return app

    first, second = installed(), installed()
    assert first.get("/api/2/subscriptions/alice/first.json", {"since": 0}).status_code == 200
    clock.advance(seconds=1)
    assert second.get("/api/2/subscriptions/alice/second.json", {"since": 0}).status_code == 200
    clock.advance(seconds=1)
    assert first.get(EPISODES, {"since": 0}).status_code == 200
    assert [e.data for e in events("first")] == ["episode_actions", "subscriptions"]
    assert [e.data for e in events("second")] == ["subscriptions"]
    # Without a session of its own (Basic alone), the device the app synced last takes it.
    clock.advance(seconds=1)
    alone = APIClient(HTTP_USER_AGENT=ANTENNAPOD)
    alone.credentials(HTTP_AUTHORIZATION=basic("alice"))
    assert alone.get(EPISODES, {"since": 0}).status_code == 200
    assert [e.kind for e in events("first")] == ["pull", "pull", "pull"]
    assert len(events("second")) == 1


def test_a_long_download_is_noted_once_it_is_all_written(phone, alice, monkeypatch):
    monkeypatch.setattr("episodes.answers.PIECE", 2)
    phone.post(EPISODES, [play(n) for n in range(5)], format="json")
    response = phone.get(EPISODES, {"since": 0})
    assert response.streaming
    assert latest().kind == "upload"  # not yet: the answer is being written
    b"".join(response.streaming_content)
    assert (latest().kind, latest().count) == ("pull", 5)


def test_a_device_keeps_only_its_latest_events(phone, alice):
    for since in range(SYNC_EVENTS_KEPT + 7):
        assert phone.get(SUBSCRIPTIONS, {"since": since}).status_code == 200
    kept = events()
    assert len(kept) == SYNC_EVENTS_KEPT
    assert [e.seq for e in kept] == list(range(SYNC_EVENTS_KEPT + 6, 6, -1))
    assert sorted(e.slot for e in kept) == list(range(SYNC_EVENTS_KEPT))


@pytest.mark.parametrize(
    ("method", "path", "body", "refused", "detail", "reason"),
    [
        (
            "post",
            EPISODES,
            [play(1), play(2, timestamp="yesterday")],
            2,
            "an upload of 2 episode actions",
            "action 1: timestamp must be an ISO 8601 time, like 2024-05-01T10:30:00",
        ),
        (
            "post",
            SUBSCRIPTIONS,
            {"add": [FEED], "remove": [FEED]},
            2,
            "an upload of 2 URLs",
            f"'{FEED}' is both added and removed",
        ),
        (
            "get",
            f"{SUBSCRIPTIONS}?since=yesterday",
            None,
            0,
            "a pull of subscription changes",
            "since must be whole seconds since the epoch (0 for everything)",
        ),
    ],
    ids=["bad-timestamp", "both-added-and-removed", "bad-since"],
)
def test_a_refused_request_is_noted_with_its_reason(
    phone, alice, method, path, body, refused, detail, reason
):
    device_touch(user=alice, device_id="phone")
    response = getattr(phone, method)(path, body, format="json")
    assert response.status_code == 400
    [event] = events()
    assert (event.kind, event.refused, event.count) == ("refusal", refused, 0)
    assert (event.detail, event.reason) == (detail, reason)


def test_a_refusal_of_an_unknown_device_or_another_users_path_notes_nothing(phone, alice, bob):
    assert phone.get("/api/2/subscriptions/alice/new.json?since=x").status_code == 400
    device_touch(user=bob, device_id="phone")
    assert phone.get("/api/2/subscriptions/bob/phone.json?since=0").status_code == 401
    assert not DeviceSyncEvent.objects.exists()


def test_unicode_and_control_characters_are_kept_as_words(alice):
    app = APIClient(HTTP_USER_AGENT="Téléphone 📱/2.0 (\x7f)")
    app.credentials(HTTP_AUTHORIZATION=basic("alice"))
    body = '{"add": ["https://ex.example/\\ud800", "https://ex.example/é.xml"], "remove": []}'
    response = app.post(SUBSCRIPTIONS, body, content_type="application/json")
    assert response.status_code == 200
    event = latest()
    assert event.agent == "Téléphone 📱/2.0 ( )"
    assert diagnostics.app_of(event.agent) == "Téléphone 📱/2.0 ( )"
    assert event.reason == "not usable as a feed's address, like https://ex.example/ "
    assert event.count == 1


def test_a_long_reason_is_cut_to_fit(phone, alice):
    long = "https://x.example/" + "a" * 5000
    assert phone.post(SUBSCRIPTIONS, {"add": [long]}, format="json").status_code == 200
    event = latest()
    assert len(event.reason) == 255
    assert event.reason.endswith("…")


@pytest.mark.parametrize(
    ("agent", "app"),
    [
        ("AntennaPod/3.5.0", "AntennaPod 3.5.0"),
        ("gPodder/3.11.4 (+http://gpodder.org/) Linux", "gPodder 3.11.4"),
        ("mygpoclient/1.10 (+https://gpodder.org/mygpoclient/)", "mygpoclient 1.10"),
        ("Kasts/23.08.0", "Kasts 23.08.0"),
        ("Mozilla/5.0 (X11; Linux x86_64)", "Mozilla 5.0"),
        ("curl", "curl"),
        ("", "an unnamed app"),
    ],
)
def test_the_app_is_read_from_its_user_agent(agent, app):
    assert diagnostics.app_of(agent) == app


# --- what it costs: one statement ------------------------------------------------------------


def statements(request: Callable[[], Any]) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = request()
        if getattr(response, "streaming", False):
            b"".join(response.streaming_content)
    assert response.status_code == 200, response.content
    return len(captured.captured_queries)


REQUESTS: dict[str, Callable[[APIClient], Any]] = {
    "subscription pull": lambda app: app.get(SUBSCRIPTIONS, {"since": 0}),
    "subscription upload": lambda app: app.post(
        SUBSCRIPTIONS, {"add": [FEED], "remove": []}, format="json"
    ),
    "simple get": lambda app: app.get("/subscriptions/alice/phone.json"),
    "simple put": lambda app: app.put(
        "/subscriptions/alice/phone.txt", FEED, content_type="text/plain"
    ),
    "episode upload": lambda app: app.post(EPISODES, [play(1)], format="json"),
    "episode upload without a device": lambda app: app.post(
        EPISODES, [play(2, device=None)], format="json"
    ),
    "episode download": lambda app: app.get(EPISODES, {"since": 0}),
}


@pytest.mark.parametrize("name", list(REQUESTS))
def test_a_sync_request_makes_one_statement_more_at_most(
    phone, alice, clock, settings, django_assert_max_num_queries, name
):
    request = REQUESTS[name]
    phone.get(SUBSCRIPTIONS, {"since": 0})  # the phone noted: the app's device, from now on
    for _ in range(2):  # the device made, the app's credentials known: the same work from now on
        request(phone)
    settings.DEVICE_SYNC_EVENTS = False
    without = statements(lambda: request(phone))
    settings.DEVICE_SYNC_EVENTS = True
    noted = events()[0].seq
    with django_assert_max_num_queries(without + 1):
        statements(lambda: request(phone))
    assert statements(lambda: request(phone)) == without + 1
    assert events()[0].seq == noted + 2


def test_without_events_nothing_is_noted(phone, alice, settings):
    settings.DEVICE_SYNC_EVENTS = False
    phone.post(SUBSCRIPTIONS, {"add": [FEED]}, format="json")
    phone.get(SUBSCRIPTIONS, {"since": 0})
    assert not DeviceSyncEvent.objects.exists()


# --- never failing the sync --------------------------------------------------------------------


def test_a_device_removed_during_the_request_is_noted_nothing(phone, alice, monkeypatch):
    from gpodder import services

    pull = services.subscription_pull

    def pulled_then_removed(**kwargs: Any) -> Any:
        changes = pull(**kwargs)
        services.device_remove(user=alice, device_id="phone")
        return changes

    monkeypatch.setattr(services, "subscription_pull", pulled_then_removed)
    assert phone.get(SUBSCRIPTIONS, {"since": 0}).status_code == 200
    assert not Device.objects.exists()
    assert not DeviceSyncEvent.objects.exists()


@pytest.mark.usefixtures("transactional_db")
def test_a_note_the_database_refuses_is_logged_and_the_sync_answered(
    phone, alice, monkeypatch, caplog
):
    """Outside a test's transaction, as the service runs."""

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise DatabaseError("disk full")

    monkeypatch.setattr(diagnostics, "sql", SimpleNamespace(param=sql.param, fetch=refused))
    with caplog.at_level(logging.WARNING, logger="gpodder.diagnostics"):
        response = phone.post(SUBSCRIPTIONS, {"add": [FEED]}, format="json")
        later.flush()
    assert response.status_code == 200
    assert "a device's sync event was not noted" in caplog.text
    assert phone.get(SUBSCRIPTIONS, {"since": 0}).json()["add"] == [FEED]


def test_events_go_with_their_device_and_account(phone, alice):
    phone.get(SUBSCRIPTIONS, {"since": 0})
    phone.get("/api/2/subscriptions/alice/tablet.json", {"since": 0})
    Device.objects.filter(device_id="phone").delete()
    assert [e.device.device_id for e in DeviceSyncEvent.objects.all()] == ["tablet"]
    alice.delete()
    assert not DeviceSyncEvent.objects.exists()
