"""The second at which the service received an action: what a download's `since` counts, and
the lock that keeps it true while a download is read."""

from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model

from core.db import locks, sql
from core.exceptions import NotAuthorized
from episodes.models import ReceivedClock

_CLOCK = ReceivedClock._meta.db_table
_SECOND = ReceivedClock._meta.get_field("second")
_CLOCK_COLUMNS = sql.Columns(_SECOND)


def hold_episode_writes(
    user_id: int, beside: locks.Beside | None = None
) -> tuple[datetime | None, tuple[Any, ...] | None]:
    """Wait until no upload of the user's is under way, and keep new ones waiting until the
    current transaction ends (or this statement, outside one); return the latest received
    second (None: no action yet), and the row of `beside`, read in the same statement
    (core.db.locks.hold_then_read).

    Shared, by a download's read point (episodes.selectors.read_point); every upload takes it
    exclusively (insert_stamped), so the clock is read after any upload under way moved it.
    In one query: having waited, it may return a second earlier than the upload it waited for
    stamped, which only makes a download's timestamp earlier (its last second comes again);
    the download's own query, which follows, sees that upload.
    """
    return locks.hold_then_read(
        locks.EPISODE_WRITES,
        user_id,
        f"SELECT second FROM {_CLOCK} WHERE user_id = %s",
        _SECOND,
        beside,
    )


def _standing_account() -> str:
    """FROM and WHERE of the user's row while the account stands (exists and is active): an
    upload's first lock refuses an account that is gone or inactive, in the upload's own
    statement, as subscriptions.locks.lock_user_writes does."""
    return f"FROM {get_user_model()._meta.db_table} WHERE id = %s AND is_active"


def stamp_received(user_id: int, now: datetime) -> datetime:
    """SQLite (the embedded default, whose transactions take the database's write lock as they
    begin, so nothing waits after `now` was read): the second an upload's actions are stamped
    with, the user's clock moved to it, as insert_stamped does on PostgreSQL. NotAuthorized,
    and nothing stamped, when the account is gone or inactive."""
    rows = sql.fetch(
        f"INSERT INTO {_CLOCK} AS c (user_id, second) SELECT %s, %s {_standing_account()}"
        " ON CONFLICT (user_id)"
        " DO UPDATE SET second = MAX(c.second, excluded.second) RETURNING second",
        [user_id, sql.param(_SECOND, now.replace(microsecond=0)), user_id],
        _CLOCK_COLUMNS,
    )
    if not rows:
        raise NotAuthorized()
    return rows[0][0]


# In insert_stamped's statement: the received second an upload's rows take, and the condition
# they are inserted under (none is when the account is gone or inactive).
STAMPED = "(SELECT second FROM stamp)"
WHILE_STAMPED = "EXISTS (SELECT FROM stamp)"


def insert_stamped(user_id: int, now: datetime, insert: tuple[str, list[Any]]) -> datetime:
    """PostgreSQL: an upload in one statement, which commits on its own when no transaction is
    open: the user's uploads serialised and downloads kept waiting until it commits (an
    advisory lock, which hold_episode_writes shares); the second its actions are stamped with,
    the user's clock moved to it; and `insert`, whose rows take STAMPED as their received
    second and are inserted WHILE_STAMPED. Returns the stamp.

    First the user's row, while the account stands, locked against its deletion (FOR KEY
    SHARE, which the rows' foreign keys take anyway, and which a sign-in's or a deactivation's
    update does not wait for): an account that is gone or inactive stamps and inserts nothing,
    and the upload is refused (NotAuthorized); one whose deletion is under way is waited for.

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
        f"WITH account AS (SELECT {_standing_account()} FOR KEY SHARE),"
        " held AS (SELECT pg_advisory_xact_lock(%s, %s) FROM account),"
        f" stamp AS (INSERT INTO {_CLOCK} AS c (user_id, second)"
        " SELECT %s, date_trunc('second', %s + (clock_timestamp() - statement_timestamp()))"
        " FROM held ON CONFLICT (user_id)"
        " DO UPDATE SET second = GREATEST(c.second, excluded.second) RETURNING second),"
        f" added AS ({query}) SELECT second FROM stamp",
        [user_id, locks.EPISODE_WRITES, user_id, user_id, sql.param(_SECOND, now), *params],
        _CLOCK_COLUMNS,
        prepare=True,
    )
    if not rows:
        raise NotAuthorized()
    return rows[0][0]
