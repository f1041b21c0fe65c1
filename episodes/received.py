"""The second at which the service received an action: what a download's `since` counts, and
the lock that keeps it true while a download is read."""

from datetime import datetime, timedelta

from django.db import connection

from core.db import sql
from episodes.models import ReceivedClock

# At most this many of a user's actions are stamped with one received second, so that an answer
# of 1,000 always holds two whole seconds: an app that sends back the last second it was
# answered (and so reads that second again) still moves on (docs/gpodder-api.md, "Episode
# actions: download").
ACTIONS_PER_SECOND = 500
# The advisory lock's first key: this service's lock on one user's episode actions.
_EPISODE_WRITES = 0x6F706165
_CLOCK = ReceivedClock._meta.db_table
_SECOND = ReceivedClock._meta.get_field("second")


def lock_episode_writes(user_id: int) -> tuple[datetime | None, int]:
    """Serialise the user's uploads (until the transaction ends); return the latest received
    second and how many actions it was given, for received_seconds.

    The lock is its own statement: a query that waits for the lock reads what was committed
    when it began, so it would miss the clock of the upload it waited for, and stamp its own
    actions before theirs. (SQLite serialises every transaction already.)
    """
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_EPISODE_WRITES, user_id])
    found = ReceivedClock.objects.filter(user_id=user_id).values_list("second", "used").first()
    return found if found is not None else (None, 0)


def hold_episode_writes(user_id: int) -> datetime | None:
    """Wait until no upload of the user's is under way, and keep new ones waiting until the
    current transaction ends; return the latest received second (None: no action yet).

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


def record_received(
    user_id: int, stamps: list[datetime], *, latest: datetime | None, used: int
) -> datetime | None:
    """Move the user's clock to the last of `stamps` (what lock_episode_writes returned was
    `latest` and `used`); return the user's latest received second.

    Stamps of actions left out as already stored count too: the clock only goes forward.
    """
    if not stamps:
        return latest
    second = stamps[-1]
    count = stamps.count(second) + (used if second == latest else 0)
    if latest is None:
        ReceivedClock.objects.create(user_id=user_id, second=second, used=count)
    else:
        ReceivedClock.objects.filter(user_id=user_id).update(second=second, used=count)
    return second


def received_seconds(
    count: int, *, now: datetime, latest: datetime | None, used: int
) -> list[datetime]:
    """The received second of each of `count` new actions: now's, or the user's latest when
    that is later (so they never go back), and the next second each time one holds
    ACTIONS_PER_SECOND. `used`: how many the latest second holds already.

    A first sync of thousands of actions so runs a few seconds ahead of the clock, which costs
    nothing: every later action is stamped after them.
    """
    second = now.replace(microsecond=0)
    room = ACTIONS_PER_SECOND
    if latest is not None and latest >= second:
        second, room = latest, ACTIONS_PER_SECOND - used
    stamps = []
    for _ in range(count):
        if room <= 0:
            second += timedelta(seconds=1)
            room = ACTIONS_PER_SECOND
        stamps.append(second)
        room -= 1
    return stamps
