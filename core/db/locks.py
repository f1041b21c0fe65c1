"""The advisory locks the project takes, by key, and the read that waits for one (docs/sync.md).

Each is a PostgreSQL transaction-level advisory lock on two keys: the first, below, names the
lock; the second is the user's id. A writer takes its lock exclusively, a read that answers a
timestamp shares it. SQLite takes none: it serialises every transaction already.
"""

from typing import Any

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


def hold_then_read(key: int, user_id: int, latest: str, field: Field) -> Any:
    """Wait until no writer holds the lock `key` on the user, and keep new ones waiting until
    the current transaction ends (or this statement, outside one); return the value of `latest`
    (a scalar subquery of `field`'s column, on the user's id as its one parameter).

    In one query, shared: reads holding it run side by side, and unlike a row lock it writes
    nothing, so the read commits without waiting for the disk.
    """
    held = "pg_advisory_xact_lock_shared(%s, %s), " if connection.vendor == "postgresql" else ""
    params = [key, user_id] if held else []
    rows = sql.fetch(
        f"SELECT {held}({latest})",
        [*params, user_id],
        sql.Columns(*([None] if held else []), field),
    )
    return rows[0][-1]
