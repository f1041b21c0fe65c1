"""Reading a user's episode actions as a download answers them (docs/gpodder-api.md, "Episode
actions: download"): everything since N in one answer, read a chunk at a time."""

from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any, NamedTuple

from django.db import connection, transaction

from core import clock
from core.db import sql
from core.db.locks import Beside
from episodes.actions import action_json
from episodes.models import EpisodeAction
from episodes.received import hold_episode_writes
from gpodder.models import Device
from gpodder.sync import settled_timestamp, sync_timestamp
from subscriptions import feeds
from subscriptions.selectors import feed_digests_alike

# Rows read at a time while an answer is written: one answer of any length in flat memory.
CHUNK = 1000


class ActionShown(NamedTuple):
    podcast: str
    episode: str
    action: str
    timestamp: datetime
    device: str | None
    guid: str
    started: int | None
    position: int | None
    total: int | None
    podcast_key: str
    received: datetime


_FIELDS = EpisodeAction._meta


def _field(name: str) -> Any:
    return _FIELDS.get_field(name)


_SHOWN = (
    "a.podcast, a.episode, a.action, a.timestamp, d.device_id, a.guid, a.started, a.position,"
    " a.total, a.podcast_key, a.received, a.id"
)
_COLUMNS = sql.Columns(
    *map(_field, ("podcast", "episode", "action", "timestamp")),
    Device._meta.get_field("device_id"),
    *map(_field, ("guid", "started", "position", "total", "podcast_key", "received", "id")),
)
_FROM = (
    f"FROM {_FIELDS.db_table} a LEFT JOIN {Device._meta.db_table} d ON d.id = a.device_id"
    " WHERE a.user_id = %s"
)


class ReadPoint(NamedTuple):
    """Where a download reads up to: the user's latest received second, held, and the clock
    read before the hold (after it, on SQLite, under its transaction)."""

    latest: datetime | None
    now: datetime
    beside: tuple[Any, ...] | None = None  # the row read with the hold, if one was asked for

    @property
    def timestamp(self) -> int:
        """What a download answers (gpodder.sync.sync_timestamp)."""
        return sync_timestamp(self.latest, now=self.now)

    def settled(self, kept: int | None) -> int:
        """The same guarantee, moving only when an action came (settled_timestamp); `kept`:
        the settled timestamp answered before, kept while the user has no action."""
        return settled_timestamp(self.latest, now=self.now, kept=kept)


def read_point(*, user_id: int, beside: Beside | None = None) -> ReadPoint:
    """The timestamp a download answers, for actions read after it: every action not yet
    committed when it is taken is stamped at or after it + 1, so a read that follows misses none
    before it (one committed meanwhile comes again next time, which is harmless).

    The clock is read first, then the uploads under way are waited for (episodes.received.
    hold_episode_writes): an upload that had not begun by then stamps its actions after that
    clock, and the ones waited for are committed before the actions are read. On PostgreSQL
    that is one statement, no transaction kept open (its BEGIN and COMMIT would be two more
    round trips of every download), as a subscription pull's (gpodder.services.
    subscription_pull), with the row of `beside` read in it too (the device of a Nextcloud
    download); SQLite serialises its transactions instead, and reads the clock while the lock
    is held. The actions themselves are read after, however long the answer takes to write.
    """
    if connection.vendor == "postgresql":
        now = clock.now()
        latest, row = hold_episode_writes(user_id, beside)
        return ReadPoint(latest, now, row)
    with transaction.atomic():
        latest, row = hold_episode_writes(user_id, beside)
        return ReadPoint(latest, clock.now(), row)


def actions_since(
    *,
    user: Any,
    since: int,
    podcast: str | None = None,
    device: str | None = None,
) -> Iterator[ActionShown]:
    """The user's actions received at or after `since` (whole seconds), oldest first, read CHUNK
    at a time, each chunk one query from where the last ended (the index on user, received and
    id): no cursor kept open between them, so a connection pooler in transaction mode serves it.

    `podcast`: only those on that feed, by any URL its subscription has had; `device`: only
    those of that device.
    """
    where, params = _filters(user, podcast, device)
    for rows in _chunks(user, since, _SHOWN, _COLUMNS, where, params):
        for row in rows:
            yield ActionShown(*row[:-1])


_TEXTS = sql.Columns(None, None, None)  # the text; received and id, converted once a chunk
_KEYSET = sql.Columns(_field("received"), _field("id"))


def action_texts_since(
    *,
    user: Any,
    since: int,
    podcast: str | None = None,
    device: str | None = None,
    with_device: bool = True,
) -> Iterator[str]:
    """actions_since's actions as the JSON texts of their bodies, written by the database
    (episodes.actions.action_json): a download's rows cost no Python each."""
    where, params = _filters(user, podcast, device)
    shown = f"{action_json(connection.vendor, with_device=with_device)}, a.received, a.id"
    for rows in _chunks(user, since, shown, _TEXTS, where, params):
        for row in rows:
            yield row[0]


def _filters(user: Any, podcast: str | None, device: str | None) -> tuple[str, list[Any]]:
    where, params = "", []
    if podcast is not None:
        digest = feeds.feed_key_digest(podcast)
        alike = feed_digests_alike(user=user, digest=digest).values_list("key_digest", flat=True)
        digests = sorted({digest, *alike})
        where += f" AND a.podcast_key IN ({', '.join(['%s'] * len(digests))})"
        params += digests
    if device is not None:
        where += " AND d.device_id = %s"
        params.append(device)
    return where, params


def _chunks(
    user: Any,
    since: int,
    shown: str,
    columns: sql.Columns,
    where: str,
    params: list[Any],
) -> Iterator[list[tuple[Any, ...]]]:
    """The rows of `shown` (received and id last) of the user's actions received at or after
    `since` and `where`, oldest first, CHUNK at a time (actions_since)."""
    received = _field("received")
    first = sql.param(received, datetime.fromtimestamp(since, UTC))
    query = f"SELECT {shown} {_FROM} AND a.received >= %s{where} ORDER BY a.received, a.id"
    rows = sql.fetch(f"{query} LIMIT {CHUNK}", [user.pk, first, *params], columns)
    following = (
        f"SELECT {shown} {_FROM} AND (a.received, a.id) > (%s, %s){where}"
        f" ORDER BY a.received, a.id LIMIT {CHUNK}"
    )
    while True:
        yield rows
        if len(rows) < CHUNK:
            return
        # Where the chunk ended, as the fields read it (converting a value again is harmless).
        last_received, last_id = _KEYSET.convert([rows[-1][-2:]])[0]
        after = [sql.param(received, last_received), last_id]
        rows = sql.fetch(following, [user.pk, *after, *params], columns)


def latest_of_each_episode(rows: Iterable[ActionShown]) -> list[ActionShown]:
    """The latest action (by the app's time, then as received) of each episode, in the order
    received. Holds one action per episode: an aggregated answer is as large as the number of
    episodes, not of actions."""
    latest: dict[tuple[str, str], tuple[int, ActionShown]] = {}
    for index, row in enumerate(rows):
        key = (row.podcast_key, row.episode)
        kept = latest.get(key)
        if kept is None or row.timestamp >= kept[1].timestamp:
            latest[key] = (index, row)
    return [row for _, row in sorted(latest.values(), key=lambda kept: kept[0])]
