"""Storing the episode actions an app uploads, and deleting those of a deleted subscription
(docs/gpodder-api.md, "Episode actions")."""

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import connection, transaction

from core import clock
from core.db import sql
from episodes.actions import SentAction, episode_sanitized, identity
from episodes.models import EpisodeAction
from episodes.received import (
    STAMPED,
    WHILE_STAMPED,
    hold_episode_writes,
    insert_stamped,
    stamp_received,
)
from gpodder.feedurls import sanitized
from gpodder.services import devices_touch
from gpodder.sync import sync_timestamp
from subscriptions import feeds
from subscriptions.selectors import subscription_feed_digests


@dataclass
class Upload:
    """What an upload answers: the timestamp to send back, and the URLs the app should
    rewrite, as [sent, used] ("" for one that cannot be used, whose action was left out)."""

    timestamp: int
    update_urls: list[list[str]] = field(default_factory=list)
    # The actions left out, their podcast or episode URL one that cannot be used.
    left_out: list[SentAction] = field(default_factory=list)
    # Of the others, how many the service held already (asked for with `counted`).
    already: int = 0


class _Sent:
    """An upload's URLs, sanitised, with what to tell the app of each it should rewrite."""

    def __init__(self) -> None:
        self.rewritten: dict[str, str] = {}

    def used(self, sent: str, use: Any) -> str | None:
        used = use(sent)
        if used != sent:
            self.rewritten[sent] = used or ""
        return used

    def update_urls(self) -> list[list[str]]:
        return [[sent, used] for sent, used in self.rewritten.items()]


def actions_upload(
    *,
    user: Any,
    actions: Sequence[SentAction],
    read_up_to: int | None = None,
    counted: bool = False,
) -> Upload:
    """Store the actions, each once however often it is sent, stamped with the second the
    service received it; an action whose podcast or episode URL cannot be used is reported and
    left out. The same number of queries for 1 action as for 1,000.

    `read_up_to`: the timestamp the app's last download was answered, when known; the answer's
    is never later. `counted`: the answer says how many of the usable actions were held
    already (the same one twice in `actions` counts once as new), for an import's summary: one
    query more.
    """
    sent = _Sent()
    usable = []
    left_out = []
    for action in actions:
        podcast = sent.used(action.podcast, sanitized)
        episode = sent.used(action.episode, episode_sanitized)
        if podcast is not None and episode is not None:
            usable.append((action, podcast, episode))
        else:
            left_out.append(action)
    devices = devices_touch(
        user=user, device_ids={a.device for a, _, _ in usable if a.device is not None}
    )
    now = clock.now()
    columns: dict[str, list[Any]] = {name: [] for name in _COLUMNS}
    for action, podcast, episode in usable:
        _add_row(columns, action, podcast, episode, now, devices)
    already = 0
    if counted and usable:
        identities = columns["identity"]
        held = EpisodeAction.objects.filter(user_id=user.pk, identity__in=identities).count()
        already = len(usable) - (len(set(identities)) - held)
    latest: datetime | None
    if usable and connection.vendor == "postgresql":
        statement = sql.insert_statement(
            EpisodeAction,
            columns,
            same={"user": user.pk},
            computed={"received": STAMPED},
            where=WHILE_STAMPED,
            ignore_conflicts=True,
        )
        latest = insert_stamped(user.pk, clock.now(), statement)
        timestamp = sync_timestamp(latest)
    else:
        with transaction.atomic():
            if usable:
                latest = stamp_received(user.pk, clock.now())
                sql.insert(
                    EpisodeAction,
                    {**columns, "received": [latest] * len(usable)},
                    same={"user": user.pk},
                    ignore_conflicts=True,
                )
            else:  # nothing stored: the answer is a download's
                latest, _ = hold_episode_writes(user.pk)
            timestamp = sync_timestamp(latest)
    if read_up_to is not None:
        # AntennaPod and Kasts keep an upload's timestamp as their next `since`, in place of
        # the one their download before was answered: a later one would skip what others
        # uploaded in between.
        timestamp = min(timestamp, read_up_to)
    return Upload(
        timestamp=timestamp, update_urls=sent.update_urls(), left_out=left_out, already=already
    )


_COLUMNS = (
    "device",
    "podcast",
    "podcast_key",
    "episode",
    "episode_key",
    "action",
    "timestamp",
    "guid",
    "started",
    "position",
    "total",
    "identity",
)


def _add_row(
    columns: dict[str, list[Any]],
    action: SentAction,
    podcast: str,
    episode: str,
    now: datetime,
    devices: dict[str, Any],
) -> None:
    timestamp = action.timestamp or now
    values = {
        "device": devices[action.device].pk if action.device else None,
        "podcast": podcast,
        "podcast_key": feeds.feed_key_digest(podcast),
        "episode": episode,
        "episode_key": feeds.url_key_digest(episode),
        "action": action.action,
        "timestamp": timestamp,
        "guid": action.guid,
        "started": action.started,
        "position": action.position,
        "total": action.total,
        "identity": identity(
            podcast=podcast,
            episode=episode,
            action=action.action,
            timestamp=timestamp,
            device=action.device,
            guid=action.guid,
            started=action.started,
            position=action.position,
            total=action.total,
        ),
    }
    for name, value in values.items():
        columns[name].append(value)


def actions_delete_of_subscriptions(*, user_id: int, subscription_ids: Collection[int]) -> int:
    """Delete the user's actions on the podcasts of these subscriptions, by any URL they have
    had; returns how many."""
    digests = subscription_feed_digests(subscription_ids=subscription_ids)
    deleted, _ = EpisodeAction.objects.filter(user_id=user_id, podcast_key__in=digests).delete()
    return deleted
