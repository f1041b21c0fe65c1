"""The advisory locks the project takes, by key, and the read that waits for one (docs/sync.md).

Each is a PostgreSQL transaction-level advisory lock on two keys: the first, below, names the
lock; the second is the user's id. A writer takes its lock exclusively, a read that answers a
timestamp shares it. SQLite takes none: it serialises every transaction already.
"""

from collections.abc import Sequence
from typing import Any, NamedTuple

from django.db import connection
from django.db.models import Field

from core.db import sql

# One user's subscription writes ("opas"): taken exclusively by every writer of them, with
# the user's row lock (subscriptions.locks.lock_user_writes); shared by the gpodder syncs that
# answer a timestamp (subscriptions.locks.hold_user_writes), so no change stamped earlier
# commits after they read.
USER_WRITES = 0x6F706173

# One user's episode action uploads ("opae"): taken exclusively by an upload's statement
# (episodes.received.insert_stamped); shared by the downloads (episodes.received.
# hold_episode_writes), so no action received earlier commits after they read.
EPISODE_WRITES = 0x6F706165


class Beside(NamedTuple):
    """A row read in the same statement as a hold (hold_then_read): `select`, the columns, of
    `source`, what follows LEFT JOIN (a table with its ON, joins after it), which finds at most
    one row; `params` are its placeholders'. Its first column is never null in a row found:
    the row is None when there is none."""

    select: str
    source: str
    params: Sequence[Any]
    columns: sql.Columns


def hold_then_read(
    key: int, user_id: int, latest: str, field: Field, beside: Beside | None = None
) -> tuple[Any, tuple[Any, ...] | None]:
    """Wait until no writer holds the lock `key` on the user, and keep new ones waiting until
    the current transaction ends (or this statement, outside one); return the value of `latest`
    (a scalar subquery of `field`'s column, on the user's id as its one parameter), and the row
    of `beside` when one is given, read in the same statement: a request that needs both (its
    device and the hold) makes one round trip, not two.

    In one query, shared: reads holding it run side by side, and unlike a row lock it writes
    nothing, so the read commits without waiting for the disk.
    """
    held = "pg_advisory_xact_lock_shared(%s, %s), " if connection.vendor == "postgresql" else ""
    params = [key, user_id] if held else []
    statement = f"SELECT {held}({latest})"
    fields: list[Any] = [*([None] if held else []), field]
    if beside is not None:
        statement += f", {beside.select} FROM (SELECT 1) one LEFT JOIN {beside.source}"
        params += [user_id, *beside.params]
        fields += beside.columns.fields
    else:
        params.append(user_id)
    # Prepared: each part is found by a key (the user's, the device's), whatever its values.
    rows = sql.fetch(statement, params, sql.Columns(*fields), prepare=True)
    first = 2 if held else 1
    found = rows[0][first:]
    return rows[0][first - 1], (found if beside is not None and found[0] is not None else None)
