"""A sync request's note is written after its answer (core.db.later): by one writer thread per
process, in the order the requests came, in batches whose commit does not wait for the disk;
at once inside a transaction, when the queue is full, or with SYNC_NOTES_AFTER_ANSWER off.
Outside a test's transaction, as the service runs."""

import json
import logging
import os
import subprocess
import sys
import threading
from typing import Any

import pytest
from django.conf import settings
from django.db import DatabaseError, connection
from rest_framework.test import APIClient

from core.db import later
from gpodder import diagnostics
from gpodder.models import DeviceSyncEvent
from tests.helpers import basic

pytestmark = pytest.mark.usefixtures("transactional_db")


@pytest.fixture(autouse=True)
def _after_the_answer(settings: Any) -> None:
    settings.SYNC_NOTES_AFTER_ANSWER = True


ANTENNAPOD = "AntennaPod/3.5.0"
FEED = "https://feeds.example/show.xml"
SUBSCRIPTIONS = "/api/2/subscriptions/alice/phone.json"
EPISODES = "/api/2/episodes/alice.json"


@pytest.fixture
def phone(alice: Any) -> APIClient:
    client = APIClient(HTTP_USER_AGENT=ANTENNAPOD)
    client.credentials(HTTP_AUTHORIZATION=basic("alice"))
    return client


def kinds() -> list[tuple[str, str]]:
    """The phone's events, the first first."""
    events = DeviceSyncEvent.objects.filter(device__device_id="phone").order_by("seq")
    return [(event.kind, event.data) for event in events]


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """The writer held at its next batch until the event is set."""
    go = threading.Event()
    written = later._written

    def waiting(batch: list[later.Write]) -> None:
        go.wait(10)
        written(batch)

    monkeypatch.setattr(later, "_written", waiting)
    return go


def test_the_answer_does_not_wait_for_its_note(phone: APIClient, held: threading.Event) -> None:
    assert phone.post(SUBSCRIPTIONS, {"add": [FEED]}, format="json").status_code == 200
    assert phone.get(SUBSCRIPTIONS, {"since": 0}).status_code == 200
    assert kinds() == []  # answered, the writer still held
    held.set()
    later.flush()
    assert kinds() == [("upload", "subscriptions"), ("pull", "subscriptions")]


def test_notes_held_back_are_written_in_their_order(
    phone: APIClient, held: threading.Event
) -> None:
    """A download names no device: it is noted on the device whose note came before it, in the
    same batch, as if each were written at once."""
    phone.get(SUBSCRIPTIONS, {"since": 0})
    action = {"podcast": FEED, "episode": "https://cdn.example/1.mp3", "action": "download"}
    assert phone.post(EPISODES, [action], format="json").status_code == 200
    assert phone.get(EPISODES, {"since": 0}).status_code == 200
    held.set()
    later.flush()
    assert kinds() == [
        ("pull", "subscriptions"),
        ("upload", "episode_actions"),
        ("pull", "episode_actions"),
    ]


def test_a_batch_commits_without_waiting_for_the_disk() -> None:
    """SQLite at synchronous NORMAL, PostgreSQL with synchronous_commit off, for the batch
    alone: on PostgreSQL the connection made durable first (the tests' server runs with it
    off), and durable again after."""
    seen: list[str] = []
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET synchronous_commit TO on")

    def setting() -> None:
        with connection.cursor() as cursor:
            if connection.vendor == "sqlite":
                cursor.execute("PRAGMA synchronous")
            else:
                cursor.execute("SELECT current_setting('synchronous_commit')")
            seen.append(str(cursor.fetchone()[0]))

    later._written([setting, setting])
    setting()
    unflushed, durable = {"sqlite": ("1", "2"), "postgresql": ("off", "on")}[connection.vendor]
    assert seen == [unflushed, unflushed, durable]
    assert not connection.in_atomic_block
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("RESET synchronous_commit")


def test_a_write_the_database_refuses_costs_only_itself(
    phone: APIClient, held: threading.Event, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    """The batch's transaction is rolled back, and each of its writes made on its own: the one
    refused is logged, the others are written."""
    fetch = diagnostics.sql.fetch

    def refusing_uploads(statement: str, params: list[Any], *args: Any, **kwargs: Any) -> Any:
        if "upload" in params:
            raise DatabaseError("disk full")
        return fetch(statement, params, *args, **kwargs)

    monkeypatch.setattr(diagnostics.sql, "fetch", refusing_uploads)
    phone.get(SUBSCRIPTIONS, {"since": 0})
    phone.post(SUBSCRIPTIONS, {"add": [FEED]}, format="json")
    phone.get(SUBSCRIPTIONS, {"since": 0})
    with caplog.at_level(logging.WARNING, logger="gpodder.diagnostics"):
        held.set()
        later.flush()
    assert caplog.text.count("a device's sync event was not noted") == 1
    assert kinds() == [("pull", "subscriptions"), ("pull", "subscriptions")]


def test_a_full_queue_writes_at_once(
    phone: APIClient, held: threading.Event, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(later, "BOUND", 1)
    writer = later.Writer()
    monkeypatch.setattr(later, "write_later", writer.write)
    phone.get(SUBSCRIPTIONS, {"since": 0})  # taken by the writer, held
    for _ in range(1000):  # at most 10 s
        if writer._queue.empty():
            break
        threading.Event().wait(0.01)
    assert writer._queue.empty()
    phone.post(SUBSCRIPTIONS, {"add": [FEED]}, format="json")  # the queue holds one
    phone.get(SUBSCRIPTIONS, {"since": 0})  # full: written at once
    assert kinds() == [("pull", "subscriptions")]
    held.set()
    writer.flush()
    assert [kind for kind, _ in kinds()] == ["pull", "pull", "upload"]


def test_off_the_note_is_written_in_the_request(
    phone: APIClient, held: threading.Event, settings: Any
) -> None:
    settings.SYNC_NOTES_AFTER_ANSWER = False
    phone.get(SUBSCRIPTIONS, {"since": 0})
    assert kinds() == [("pull", "subscriptions")]


def test_a_process_that_ends_writes_what_it_holds(
    alice: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer's last notes at the process's exit: a process of its own syncs and ends."""
    code = f"""
import json, os, django
django.setup()
from django.conf import settings
settings.DATABASES["default"].update(json.loads(os.environ["THE_DATABASE"]))
from rest_framework.test import APIClient
from tests.helpers import basic
c = APIClient(HTTP_USER_AGENT={ANTENNAPOD!r}, SERVER_NAME="localhost")
c.credentials(HTTP_AUTHORIZATION=basic("alice"))
assert c.get({SUBSCRIPTIONS!r}, {{"since": 0}}).status_code == 200
"""
    monkeypatch.setenv("SYNC_NOTES_AFTER_ANSWER", "true")
    db = settings.DATABASES["default"]
    found = {key: db[key] for key in ("NAME", "HOST", "PORT", "USER", "PASSWORD")}
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "THE_DATABASE": json.dumps(found)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert kinds() == [("pull", "subscriptions")]
