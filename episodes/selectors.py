"""Reading a user's episode actions as a download answers them (docs/gpodder-api.md, "Episode
actions: download")."""

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple

from django.db import transaction
from django.db.models import Q

from episodes.models import EpisodeAction
from episodes.received import ACTIONS_PER_SECOND, hold_episode_writes
from gpodder.sync import sync_timestamp
from subscriptions import feeds
from subscriptions.selectors import feed_digests_alike

# The most actions one answer holds; the rest come with the next `since`.
PAGE_SIZE = 1000
# A page cut short keeps at least one whole second besides the one it may start with.
assert PAGE_SIZE >= 2 * ACTIONS_PER_SECOND


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
    received: datetime
    podcast_key: str


_SHOWN = (
    "podcast",
    "episode",
    "action",
    "timestamp",
    "device__device_id",
    "guid",
    "started",
    "position",
    "total",
    "received",
    "podcast_key",
)


@dataclass(frozen=True)
class Page:
    actions: list[ActionShown]
    timestamp: int


def actions_page(
    *,
    user: Any,
    since: int,
    podcast: str | None = None,
    device: str | None = None,
    aggregated: bool = False,
) -> Page:
    """The user's actions received at or after `since` (whole seconds), oldest first, at most
    PAGE_SIZE of them and never part of a received second; and the timestamp to send back.

    `podcast`: only those on that feed, by any URL its subscription has had; `device`: only
    those of that device; `aggregated`: only the latest (by the app's time) of each episode.

    The timestamp T lets an app that sends back T, or T + 1, as its next `since` miss nothing:
    after a page cut short, T is the page's last second, which every action not yet answered
    was received after; after the last page, it is what gpodder.sync gives, read while no
    upload is under way.
    """
    actions = EpisodeAction.objects.filter(
        user=user, received__gte=datetime.fromtimestamp(since, UTC)
    )
    if podcast is not None:
        digest = feeds.feed_key_digest(podcast)
        alike = feed_digests_alike(user=user, digest=digest)
        actions = actions.filter(Q(podcast_key=digest) | Q(podcast_key__in=alike))
    if device is not None:
        actions = actions.filter(device__device_id=device)
    with transaction.atomic():
        latest = hold_episode_writes(user.pk)
        rows = [
            ActionShown(*row)
            for row in actions.order_by("received", "id").values_list(*_SHOWN)[: PAGE_SIZE + 1]
        ]
        if len(rows) > PAGE_SIZE:
            cut = rows[PAGE_SIZE].received  # this second may go on past the rows read
            rows = [row for row in rows if row.received < cut]
            timestamp = int(rows[-1].received.timestamp())
        else:
            # While the uploads are still held: the clock it reads must not run on past one
            # that stamps its actions meanwhile.
            timestamp = sync_timestamp(latest)
    if aggregated:
        rows = _latest_of_each_episode(rows)
    return Page(actions=rows, timestamp=timestamp)


def _latest_of_each_episode(rows: list[ActionShown]) -> list[ActionShown]:
    """The latest action (by the app's time, then as received) of each episode, in the order
    received."""
    latest: dict[tuple[str, str], tuple[int, ActionShown]] = {}
    for index, row in enumerate(rows):
        key = (row.podcast_key, row.episode)
        kept = latest.get(key)
        if kept is None or row.timestamp >= kept[1].timestamp:
            latest[key] = (index, row)
    return [row for _, row in sorted(latest.values(), key=lambda kept: kept[0])]
