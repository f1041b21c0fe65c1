"""A sync that reads writes nothing but its sync event: an app pulling an account nobody changed
is answered the same timestamp every time, and neither its device's read point, its last use nor
anything else is written (a commit would wait for the disk); only the one statement that notes
the request for the device's page (gpodder.diagnostics), which does not wait for the disk. When
something did change, the one note a pull makes commits without waiting for the disk either
(docs/gpodder-api.md, "Timestamps")."""

import json
import re
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.db.models import Max
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from gpodder.models import Device, DeviceSyncEvent
from tests.helpers import PASSWORD, basic
from tests.nextcloud.helpers import nextcloud_client

WRITE = re.compile(r"^\s*(INSERT|UPDATE|DELETE)\b", re.IGNORECASE)
FEED = "https://feeds.example.com/show.xml"
SUBSCRIPTIONS = "/api/2/subscriptions/alice/phone.json"
EPISODES = "/api/2/episodes/alice.json"
NEXTCLOUD = "/index.php/apps/gpoddersync"


def play(n: int) -> dict[str, Any]:
    return {
        "podcast": FEED,
        "episode": f"https://cdn.example.com/{n}.mp3",
        "action": "play",
        "timestamp": "2024-05-01T10:30:00",
        "position": n,
    }


SYNC_EVENT = f"INSERT INTO {DeviceSyncEvent._meta.db_table} "


def writes(captured: CaptureQueriesContext) -> list[str]:
    """The writes of the requests, but their sync events (sync_events)."""
    return [
        q["sql"]
        for q in captured.captured_queries
        if WRITE.match(q["sql"] or "") and not (q["sql"] or "").startswith(SYNC_EVENT)
    ]


def sync_events(captured: CaptureQueriesContext) -> list[str]:
    """The requests' sync events whose text was logged (a prepared statement's is not): one
    statement each, whose commit does not wait for the disk."""
    noted = [q["sql"] for q in captured.captured_queries if (q["sql"] or "").startswith(SYNC_EVENT)]
    for note in noted:
        if connection.vendor == "postgresql":
            assert "set_config('synchronous_commit', 'off', true)" in note
    return noted


def noted() -> int:
    """How many sync events the devices have had (each keeps its latest few)."""
    latest = Device.objects.annotate(latest=Max("sync_events__seq")).values_list(
        "latest", flat=True
    )
    return sum(seq + 1 for seq in latest if seq is not None)


def body(response: Any) -> Any:
    assert response.status_code == 200, response.content
    if response.streaming:
        return json.loads(b"".join(response.streaming_content))
    return response.json()


@pytest.fixture
def phone(alice: Any) -> APIClient:
    """AntennaPod: Basic on its login, then its cookies."""
    client = APIClient()
    login = client.post("/api/2/auth/alice/login.json", HTTP_AUTHORIZATION=basic("alice"))
    assert login.status_code == 200
    return client


def test_pulls_of_an_account_nobody_changed_answer_one_timestamp_and_write_nothing(
    phone: APIClient, clock: Any
) -> None:
    phone.post(SUBSCRIPTIONS, {"add": [FEED], "remove": []}, format="json")
    phone.post(EPISODES, [play(1)], format="json")
    clock.advance(minutes=5)
    first = body(phone.get(SUBSCRIPTIONS, {"since": 0}))["timestamp"]
    body(phone.get(EPISODES, {"since": 0}))

    for _ in range(3):
        clock.advance(seconds=7)
        before = noted()
        with CaptureQueriesContext(connection) as captured:
            pulled = body(phone.get(SUBSCRIPTIONS, {"since": first}))
            downloaded = body(phone.get(EPISODES, {"since": first}))
        assert pulled == {"add": [], "remove": [], "timestamp": first}
        assert downloaded["actions"] == []
        assert writes(captured) == []
        sync_events(captured)
        assert noted() == before + 2


@pytest.mark.postgresql
def test_a_pull_after_a_change_notes_its_timestamp_without_waiting_for_the_disk(
    transactional_db: None, phone: APIClient, alice: Any, clock: Any, settings: Any
) -> None:
    """Outside a test's transaction, as the service runs: inside one, the outer transaction's
    commit would decide. The sync note in the request, where the test sees its statements
    (after the answer: tests/gpodder/test_notes_after_answer.py)."""
    settings.SYNC_NOTES_AFTER_ANSWER = False
    phone.post(SUBSCRIPTIONS, {"add": [FEED], "remove": []}, format="json")
    clock.advance(minutes=5)
    before = body(phone.get(SUBSCRIPTIONS, {"since": 0}))["timestamp"]
    laptop = APIClient()
    laptop.credentials(HTTP_AUTHORIZATION=basic("alice", PASSWORD))
    laptop.post(
        "/api/2/subscriptions/alice/laptop.json", {"add": [], "remove": [FEED]}, format="json"
    )
    clock.advance(minutes=5)

    with CaptureQueriesContext(connection) as captured:
        pulled = body(phone.get(SUBSCRIPTIONS, {"since": before}))

    assert pulled["remove"] == [FEED]
    assert pulled["timestamp"] > before
    # Its read point moved, and (five minutes on) its last use: each a note of its own that
    # does not wait for the disk.
    notes = writes(captured)
    assert [note for note in notes if "pulled_up_to" in note]
    assert all("pulled_up_to" in note or "last_used" in note for note in notes)
    assert len(sync_events(captured)) == 1
    sent = [q["sql"] for q in captured.captured_queries]
    for note in notes:
        assert sent[sent.index(note) - 1] == "SET LOCAL synchronous_commit TO OFF"


def test_a_nextcloud_app_polling_an_account_nobody_changed_writes_nothing(
    alice: Any, clock: Any
) -> None:
    app = nextcloud_client("alice")
    app.post(
        f"{NEXTCLOUD}/subscription_change/create", {"add": [FEED], "remove": []}, format="json"
    )
    app.post(f"{NEXTCLOUD}/episode_action/create", [play(1)], format="json")
    clock.advance(minutes=5)
    body(app.get(f"{NEXTCLOUD}/subscriptions", {"since": 0}))
    first = body(app.get(f"{NEXTCLOUD}/episode_action", {"since": 0}))["timestamp"]

    for _ in range(3):
        clock.advance(seconds=7)
        before = noted()
        with CaptureQueriesContext(connection) as captured:
            body(app.get(f"{NEXTCLOUD}/subscriptions", {"since": first}))
            answer = body(app.get(f"{NEXTCLOUD}/episode_action", {"since": first}))
        # Kasts downloads again while the answer is over 10 s behind its clock: it keeps up.
        assert answer["timestamp"] >= (clock.now - timedelta(seconds=10)).timestamp()
        assert writes(captured) == []
        sync_events(captured)
        assert noted() == before + 2


def test_an_account_with_nothing_yet_is_pulled_and_downloaded_without_writes(
    phone: APIClient, alice: Any, clock: Any
) -> None:
    """No subscription and no action ever: the first answer stays, as every change comes
    after it."""
    app = nextcloud_client("alice")
    first = body(phone.get(SUBSCRIPTIONS, {"since": 0}))["timestamp"]
    body(app.get(f"{NEXTCLOUD}/episode_action", {"since": 0}))
    for _ in range(3):
        clock.advance(seconds=7)
        before = noted()
        with CaptureQueriesContext(connection) as captured:
            assert body(phone.get(SUBSCRIPTIONS, {"since": first}))["timestamp"] == first
            body(app.get(f"{NEXTCLOUD}/episode_action", {"since": first}))
        assert writes(captured) == []
        sync_events(captured)
        assert noted() == before + 2
    # The first change after them is found from that timestamp, and from the one after it.
    phone.post(SUBSCRIPTIONS, {"add": [FEED], "remove": []}, format="json")
    for since in (first, first + 1):
        assert body(phone.get(SUBSCRIPTIONS, {"since": since}))["add"] == [FEED]
