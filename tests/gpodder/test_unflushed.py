"""core.db.hints.unflushed: a read path's own write (a device's read point or last use, a sync
request's note) commits without waiting for the disk, on PostgreSQL and on the home server's
SQLite alike, and nothing else does: the connection is set back after it, even when it fails,
and inside another transaction that one's commit decides. Here, in a suite the home server's
settings run too (the Makefile's HOME_SLICE)."""

from typing import Any

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from core import clock
from core.db.hints import unflushed
from gpodder import diagnostics
from gpodder.models import Device, DeviceSyncEvent
from tests.factories import UserFactory


def flushing() -> str:
    """What the connection's next commit waits for: PostgreSQL's synchronous_commit ("off" on
    the tests' own server, started not crash-safe), SQLite's synchronous (2 FULL, 1 NORMAL)."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("PRAGMA synchronous")
        else:
            cursor.execute("SELECT current_setting('synchronous_commit')")
        return str(cursor.fetchone()[0])


UNFLUSHED = {"sqlite": "1", "postgresql": "off"}


def device(user: Any) -> Device:
    return Device.objects.create(
        user=user, device_id="phone", created=clock.now(), last_used=clock.now()
    )


@pytest.mark.django_db(transaction=True)
def test_only_the_write_inside_commits_without_waiting_for_the_disk() -> None:
    before = flushing()
    if connection.vendor == "sqlite":
        assert before == "2"  # FULL, as config/settings/base.py opens every connection
    user: Any = UserFactory()
    with unflushed():
        inside = flushing()
        device(user)
    assert inside == UNFLUSHED[connection.vendor]
    assert flushing() == before
    assert Device.objects.filter(user=user, device_id="phone").exists()


@pytest.mark.django_db(transaction=True)
def test_a_write_that_fails_inside_leaves_the_connection_as_it_was() -> None:
    before = flushing()
    user: Any = UserFactory()

    def failing() -> None:
        with unflushed():
            device(user)
            raise RuntimeError("the write failed")

    with pytest.raises(RuntimeError):
        failing()
    assert flushing() == before
    assert not Device.objects.filter(user=user).exists()  # rolled back whole


@pytest.mark.django_db(transaction=True)
def test_inside_another_transaction_its_commit_decides() -> None:
    before = flushing()
    with transaction.atomic(), unflushed():
        inside = flushing()
    assert inside == before
    assert flushing() == before


@pytest.mark.django_db(transaction=True)
def test_a_sync_requests_note_commits_without_waiting_for_the_disk() -> None:
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
    assert flushing() == before
