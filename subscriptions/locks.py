"""The lock on one user's writes and the time they are stamped with (docs/sync.md): taken by
every write of a user's subscriptions (subscriptions, gpodder, deletions, web), shared by
the reads that answer a timestamp."""

import functools
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection

from core import clock
from core.db import locks, sql
from core.exceptions import NotAuthorized
from subscriptions.models import Subscription

_SUBSCRIPTIONS = Subscription._meta.db_table
_CHANGED = Subscription._meta.get_field("changed")
_LOCKED_COLUMNS = sql.Columns(_CHANGED)


def lock_user_writes(user_id: int, *, inactive: bool = False) -> datetime:
    """Serialise one user's writes (until the transaction ends); return the time to stamp them.

    Taken exclusively, first, by every write of the user's subscriptions: the
    user's row (FOR UPDATE) and the advisory lock hold_user_writes shares, in one query.
    Concurrent adds of one feed then make one subscription, and a merge never races a deletion.
    The time is the clock's, but always after the user's latest change, so that a list's `since`
    (strictly later than) never misses a change: not one made in the same millisecond as the
    last, nor one made on a machine whose clock is behind another's.

    NotAuthorized when the user is gone, or inactive unless `inactive` (the deletions' work on
    an account they deactivated): a request authenticated before its account was deleted or
    deactivated writes nothing after that committed (docs/api.md, "Deleting an account"). The
    lock waits for a deletion or deactivation under way, then reads what it committed.
    """
    return lock_user_writes_after(user_id, inactive=inactive)[0]


def lock_user_writes_after(
    user_id: int, *, inactive: bool = False
) -> tuple[datetime, datetime | None]:
    """lock_user_writes, with the time of the user's latest change before these writes (None:
    none yet), read in the same query: written out and prepared (core.db.sql), since every
    write of a user's subscriptions takes it and the ORM's would build it anew each time."""
    rows = sql.fetch(
        _locked(connection.vendor == "postgresql", inactive),
        [locks.USER_WRITES, user_id] if connection.vendor == "postgresql" else [user_id],
        _LOCKED_COLUMNS,
        prepare=True,
    )
    if not rows:
        raise NotAuthorized()
    last_change = rows[0][0]
    now = clock.now()
    if last_change is not None and last_change >= now:
        return last_change + timedelta(milliseconds=1), last_change
    return now, last_change


@functools.cache
def _locked(postgresql: bool, inactive: bool) -> str:
    """The user's row locked (FOR UPDATE) with the user's latest change; on PostgreSQL also the
    advisory lock hold_user_writes shares, in the same query. SQLite locks the database."""
    held = ", pg_advisory_xact_lock(%s, u.id)" if postgresql else ""
    return (
        f"SELECT (SELECT s.changed FROM {_SUBSCRIPTIONS} s WHERE s.user_id = u.id"
        f" ORDER BY s.changed DESC LIMIT 1){held}"
        f" FROM {get_user_model()._meta.db_table} u WHERE u.id = %s"
        + ("" if inactive else " AND u.is_active")
        + (" FOR UPDATE OF u" if postgresql else "")
    )


def hold_user_writes(user_id: int) -> datetime | None:
    """Wait until no write of the user is under way, and keep new ones waiting until the current
    transaction ends; return the time of the user's latest change (None: none yet).

    Shared, by the gpodder syncs that answer a timestamp: reads holding it run side by side,
    and what they read cannot be joined later by a change stamped earlier (every writer takes
    it exclusively first: lock_user_writes).
    """
    return hold_user_writes_beside(user_id, None)[0]


def hold_user_writes_beside(
    user_id: int, beside: locks.Beside | None
) -> tuple[datetime | None, tuple[Any, ...] | None]:
    """hold_user_writes, with the row of `beside` read in the same statement
    (core.db.locks.hold_then_read)."""
    return locks.hold_then_read(
        locks.USER_WRITES,
        user_id,
        f"SELECT MAX(changed) FROM {Subscription._meta.db_table} WHERE user_id = %s",
        Subscription._meta.get_field("changed"),
        beside,
    )
