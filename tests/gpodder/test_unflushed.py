"""core.db.hints.unflushed: a read path's own write (a device's read point or last use, a sync
request's note) commits without waiting for the disk, on PostgreSQL and on the home server's
SQLite alike, and nothing else does: the connection is set back after it, even when it fails,
and inside another transaction that one's commit decides. A device's first read point is the
exception: it waits. Here, in a suite the home server's settings run too (the Makefile's
HOME_SLICE)."""

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from core import clock
from core.db.hints import unflushed
from gpodder import diagnostics
from gpodder.models import Device, DeviceSyncEvent
from nextcloud.models import ActionsRead
from tests.factories import UserFactory
from tests.nextcloud.helpers import nextcloud_client

NEXTCLOUD = "/index.php/apps/gpoddersync"


def play(n: int) -> dict[str, Any]:
    return {
        "podcast": "https://feeds.example.com/show.xml",
        "episode": f"https://cdn.example.com/{n}.mp3",
        "action": "PLAY",
        "timestamp": "2024-05-01T10:30:00",
        "started": 0,
        "position": n,
        "total": 600,
    }


def flushing() -> str:
    """What the connection's next commit waits for: PostgreSQL's synchronous_commit, SQLite's
    synchronous (2 FULL, 1 NORMAL)."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("PRAGMA synchronous")
        else:
            cursor.execute("SELECT current_setting('synchronous_commit')")
        return str(cursor.fetchone()[0])


DURABLE = {"sqlite": "2", "postgresql": "on"}
UNFLUSHED = {"sqlite": "1", "postgresql": "off"}


@pytest.fixture
def durable(transactional_db: None) -> Iterator[None]:
    """Outside a test's transaction, and on PostgreSQL with commits waiting for the disk, as
    deployed: the tests' own server runs with synchronous_commit off, which would hide whether
    unflushed turned it off. SQLite's connections are FULL already (config/settings/base.py)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET synchronous_commit TO on")
    yield
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("RESET synchronous_commit")


def device(user: Any) -> Device:
    return Device.objects.create(
        user=user, device_id="phone", created=clock.now(), last_used=clock.now()
    )


def test_only_the_write_inside_commits_without_waiting_for_the_disk(durable: None) -> None:
    before = flushing()
    assert before == DURABLE[connection.vendor]
    user: Any = UserFactory()
    with unflushed():
        inside = flushing()
        device(user)
    assert inside == UNFLUSHED[connection.vendor]
    assert flushing() == before
    assert Device.objects.filter(user=user, device_id="phone").exists()


def test_a_write_that_fails_inside_leaves_the_connection_as_it_was(durable: None) -> None:
    before = flushing()
    assert before == DURABLE[connection.vendor]
    user: Any = UserFactory()

    def failing() -> None:
        with unflushed():
            device(user)
            raise RuntimeError("the write failed")

    with pytest.raises(RuntimeError):
        failing()
    assert flushing() == before
    assert not Device.objects.filter(user=user).exists()  # rolled back whole


def test_inside_another_transaction_its_commit_decides(durable: None) -> None:
    with transaction.atomic(), unflushed():
        inside = flushing()
    assert inside == DURABLE[connection.vendor]
    assert flushing() == DURABLE[connection.vendor]


def test_a_sync_requests_note_commits_without_waiting_for_the_disk(
    durable: None, settings: Any
) -> None:
    """Written at once; after the answer, the writer's batch is unflushed as a whole
    (tests/gpodder/test_notes_after_answer.py)."""
    settings.SYNC_NOTES_AFTER_ANSWER = False
    user: Any = UserFactory()
    device(user)
    before = flushing()
    with CaptureQueriesContext(connection) as captured:
        diagnostics.sync_note_record(
            user_id=user.pk,
            protocol=diagnostics.Protocol.GPODDER,
            agent="AntennaPod/3.8.0",
            session_key=None,
            notes={"phone": diagnostics.subscriptions_pulled(added=1, removed=0)},
        )
    assert DeviceSyncEvent.objects.filter(device__user=user).count() == 1
    sent = [q["sql"] or "" for q in captured.captured_queries]
    (at,) = [i for i, text in enumerate(sent) if text.startswith("INSERT INTO")]
    if connection.vendor == "sqlite":  # around the note's transaction (BEGIN IMMEDIATE, COMMIT)
        settings = [(i, text) for i, text in enumerate(sent) if text.startswith("PRAGMA")]
        assert [text for i, text in settings if i < at][-1] == "PRAGMA synchronous = NORMAL"
        assert next(text for i, text in settings if i > at) == f"PRAGMA synchronous = {before}"
    else:  # in the statement itself, no round trip of its own
        assert "set_config('synchronous_commit', 'off', true)" in sent[at]
    assert flushing() == before == DURABLE[connection.vendor]


def unflushed_before(sent: list[str], at: int) -> bool:
    """Whether the statement `sent[at]` was made unflushed."""
    if connection.vendor == "sqlite":
        settings = [text for text in sent[:at] if text.startswith("PRAGMA synchronous")]
        return bool(settings) and settings[-1] == "PRAGMA synchronous = NORMAL"
    return sent[at - 1] == "SET LOCAL synchronous_commit TO OFF"


def unflushed_writes(captured: CaptureQueriesContext, table: str) -> list[bool]:
    """For each insert into `table` the requests made, whether it was made unflushed."""
    sent = [q["sql"] or "" for q in captured.captured_queries]
    return [
        unflushed_before(sent, at)
        for at, text in enumerate(sent)
        if text.startswith(f"INSERT INTO {table} ")
    ]


def test_a_nextcloud_devices_first_read_point_waits_for_the_disk_and_later_ones_do_not(
    transactional_db: None, alice: Any, clock: Any
) -> None:
    """Lost in a crash, a later read point leaves the one before it, earlier: its actions come
    again. The first would leave none, and the device's next download would start from the
    app's own clock, past what other devices uploaded meanwhile."""
    app = nextcloud_client("alice")
    read = ActionsRead._meta.db_table
    for n in (1, 2):
        app.post(f"{NEXTCLOUD}/episode_action/create", [play(n)], format="json")
        clock.advance(minutes=5)
        with CaptureQueriesContext(connection) as captured:
            response = app.get(f"{NEXTCLOUD}/episode_action", {"since": 0})
        assert response.status_code == 200, response.content
        assert unflushed_writes(captured, read) == [n == 2]


def test_a_devices_first_pull_point_waits_for_the_disk_and_later_ones_do_not(
    transactional_db: None, alice: Any, clock: Any
) -> None:
    """As the Nextcloud read point: the subscription pull's (Device.pulled_up_to), which the
    Nextcloud subscriptions start from and a gpodder upload answers no later than."""
    app = nextcloud_client("alice")
    for feed in ("https://feeds.example.com/1.xml", "https://feeds.example.com/2.xml"):
        app.post(
            f"{NEXTCLOUD}/subscription_change/create", {"add": [feed], "remove": []}, format="json"
        )
        clock.advance(minutes=5)
        with CaptureQueriesContext(connection) as captured:
            response = app.get(f"{NEXTCLOUD}/subscriptions", {"since": 0})
        assert response.status_code == 200, response.content
        sent = [q["sql"] or "" for q in captured.captured_queries]
        (at,) = [i for i, t in enumerate(sent) if t.startswith("UPDATE") and "pulled_up_to" in t]
        assert unflushed_before(sent, at) == feed.endswith("2.xml")
