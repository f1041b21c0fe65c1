"""The second at which the service received an action: what a download's `since` counts, and
the lock that keeps it true while a download is read."""

from datetime import datetime
from typing import Any

from django.db import connection

from core.db import sql
from episodes.models import ReceivedClock

# The advisory lock's first key: this service's lock on one user's episode actions.
_EPISODE_WRITES = 0x6F706165
_CLOCK = ReceivedClock._meta.db_table
_SECOND = ReceivedClock._meta.get_field("second")
_CLOCK_COLUMNS = sql.Columns(_SECOND)


def hold_episode_writes(user_id: int) -> datetime | None:
    """Wait until no upload of the user's is under way, and keep new ones waiting until the
    current transaction ends (or this statement, outside one); return the latest received
    second (None: no action yet).

    In one query: having waited, it may return a second earlier than the upload it waited for
    stamped, which only makes a download's timestamp earlier (its last second comes again);
    the download's own query, which follows, sees that upload.
    """
    held = "pg_advisory_xact_lock_shared(%s, %s), " if connection.vendor == "postgresql" else ""
    params = [_EPISODE_WRITES, user_id] if held else []
    rows = sql.fetch(
        f"SELECT {held}(SELECT second FROM {_CLOCK} WHERE user_id = %s)",
        [*params, user_id],
        sql.Columns(*([None] if held else []), _SECOND),
    )
    return rows[0][-1]


def stamp_received(user_id: int, now: datetime) -> datetime:
    """SQLite (the embedded default, whose transactions take the database's write lock as they
    begin, so nothing waits after `now` was read): the second an upload's actions are stamped
    with, the user's clock moved to it, as insert_stamped does on PostgreSQL."""
    rows = sql.fetch(
        f"INSERT INTO {_CLOCK} AS c (user_id, second) VALUES (%s, %s) ON CONFLICT (user_id)"
        " DO UPDATE SET second = MAX(c.second, excluded.second) RETURNING second",
        [user_id, sql.param(_SECOND, now.replace(microsecond=0))],
        _CLOCK_COLUMNS,
    )
    return rows[0][0]


# The stamp, in insert_stamped's statement: what an upload's rows take as their received second.
STAMPED = "(SELECT second FROM stamp)"


def insert_stamped(user_id: int, now: datetime, insert: tuple[str, list[Any]]) -> datetime:
    """PostgreSQL: an upload in one statement, which commits on its own when no transaction is
    open: the user's uploads serialised and downloads kept waiting until it commits (an
    advisory lock, which hold_episode_writes shares); the second its actions are stamped with,
    the user's clock moved to it; and `insert`, whose rows take STAMPED as their received
    second. Returns the stamp.

    The stamp is now's second, or the user's latest when that is later (a web machine whose
    clock runs ahead stamped it), so stamps never go back; the upsert reads the clock's latest
    committed value, the one of an upload it waited for too, whatever the statement's snapshot.
    The clock is kept apart from the actions, and moved by uploads whose actions were all
    stored already too: deleting or resending actions never moves it back.

    `now` is advanced by the time the statement took until then (the database's own
    clock, which only measures the wait: no other machine's clock is read), so that waiting for
    a download's lock never leaves it behind the clock that download answered from.
    """
    query, params = insert
    rows = sql.fetch(
        "WITH held AS (SELECT pg_advisory_xact_lock(%s, %s)),"
        f" stamp AS (INSERT INTO {_CLOCK} AS c (user_id, second)"
        " SELECT %s, date_trunc('second', %s + (clock_timestamp() - statement_timestamp()))"
        " FROM held ON CONFLICT (user_id)"
        " DO UPDATE SET second = GREATEST(c.second, excluded.second) RETURNING second),"
        f" added AS ({query}) SELECT second FROM stamp",
        [_EPISODE_WRITES, user_id, user_id, sql.param(_SECOND, now), *params],
        _CLOCK_COLUMNS,
        prepare=True,
    )
    return rows[0][0]
