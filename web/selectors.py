"""What the pages read: a person's podcasts, devices, listening history and everything of theirs,
each page in a constant number of queries however much they have (docs/web.md, "Speed")."""

import uuid
from collections.abc import Collection, Hashable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

import orjson
from django.core.paginator import Page, Paginator
from django.db import connection
from django.db.models import F, Max, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.expressions import RawSQL
from django.db.models.functions import Coalesce, Lower, NullIf

from accounts.models import AppPassword
from api.fields import format_timestamp
from core import clock
from core.exceptions import NotFound
from core.text import xml_text
from deletions.models import Deletion
from episodes.matching import episode_match_sql, episode_title_sql, episodes_by_id
from episodes.models import EpisodeAction
from feedchecks.models import FeedEpisode
from feedchecks.selectors import (
    feed_health,
    subscriptions_with_feed_details,
    subscriptions_with_feed_health,
    subscriptions_with_feed_title,
)
from gpodder.models import Device, DeviceFeed, DeviceSyncEvent
from gpodder.selectors import SyncDiagnostics, device_sync_diagnostics, devices_with_last_app
from nextcloud.services import device_id_for
from subscriptions import opml
from subscriptions.models import Subscription, SubscriptionFeed, SubscriptionGuid
from subscriptions.selectors import (
    subscription_current,
    subscription_feed_digests,
    subscriptions_titled,
)

PODCASTS_PER_PAGE = 50
DEVICES_PER_PAGE = 50
# The history page lists this many podcasts a page, the one played last first, each with this
# many of its latest episodes; all of them are on the podcast's own page, this many a page.
HISTORY_PODCASTS_PER_PAGE = 10
HISTORY_EPISODES_PER_PODCAST = 10
PODCAST_HISTORY_PER_PAGE = 20
# A podcast's page also lists this many of the newest episodes in its feed, played or not, with
# what was played where...
PODCAST_EPISODES = 20
# ... read from at most this many of the latest actions on them.
PODCAST_EPISODE_ACTIONS = 500
EXPORT_CHUNK = 2000
# A confirmation counts what goes or stays up to this many, and then says "more than": the
# count of a device's or a podcast's 100,000 actions would cost the page a scan of them all.
COUNTED_AT_MOST = 1_000
_ACTIONS = EpisodeAction._meta.db_table


class _Latest(NamedTuple):
    """The latest action on an episode under one of its podcast's feed URLs and one guid."""

    id: int
    podcast_key: str
    named: str  # the episode's URL key (its URL, for an action stored before keys were)
    catalogued: int | None  # its entry in the feed's catalogue

    @property
    def episode(self) -> Hashable:
        """What makes it one episode: its catalogue entry, whichever URL or guid named it,
        else its URL, in any spelling."""
        return ("catalogued", self.catalogued) if self.catalogued is not None else self.named


# The latest action on each episode that the podcast feed URLs (their keys) have actions on, the
# latest first: one row a feed URL, guid and episode URL (the same episode under two of them
# comes twice, and _each_episode_once makes it one), with the episode it finds in the catalogue.
# Matched after the window has kept one row of each, so that an episode played a thousand times
# is looked up once; and only ids are read, the few shown whole afterwards (_actions_shown).
_LATEST_OF_EACH_EPISODE = """
SELECT g.id, g.podcast_key, g.named, ({match}) FROM (
    SELECT a.id, a.user_id, a.podcast_key, a.guid, a.episode_key, a.timestamp,
        COALESCE(NULLIF(a.episode_key, ''), a.episode) AS named,
        ROW_NUMBER() OVER (
            PARTITION BY a.podcast_key, a.guid, COALESCE(NULLIF(a.episode_key, ''), a.episode)
            ORDER BY a.timestamp DESC, a.id DESC
        ) AS latest
    FROM {actions} a
    WHERE a.user_id = %s AND a.podcast_key IN ({keys})
) g
WHERE g.latest = 1
ORDER BY g.timestamp DESC, g.id DESC
"""


def _latest_of_each_episode(*, user: Any, keys: Collection[str]) -> list[_Latest]:
    if not keys:
        return []
    query = _LATEST_OF_EACH_EPISODE.format(
        match=episode_match_sql("g"), actions=_ACTIONS, keys=", ".join(["%s"] * len(keys))
    )
    with connection.cursor() as cursor:
        cursor.execute(query, [user.pk, *keys])
        return [_Latest(*row) for row in cursor.fetchall()]


def _each_episode_once(
    latest: list[_Latest], podcast_of: dict[str, Hashable]
) -> dict[Hashable, list[_Latest]]:
    """`latest` (the latest first) by podcast, which `podcast_of` their feed URL's key (else
    ("feed", the key)); each episode (_Latest.episode) once, by its latest action."""
    podcasts: dict[Hashable, list[_Latest]] = {}
    seen: set[tuple[Hashable, Hashable]] = set()
    for action in latest:
        podcast = podcast_of.get(action.podcast_key, ("feed", action.podcast_key))
        if (podcast, action.episode) not in seen:
            seen.add((podcast, action.episode))
            podcasts.setdefault(podcast, []).append(action)
    return podcasts


def _actions_shown(latest: list[_Latest]) -> list[EpisodeAction]:
    """The actions `latest`, whole, each with its device and `catalogued`: its episode in the
    feed's catalogue (None when the feed check has nothing for it); in two queries."""
    found = EpisodeAction.objects.select_related("device").in_bulk([one.id for one in latest])
    episodes = episodes_by_id([one.catalogued for one in latest])
    shown = []
    for one in latest:
        action = found.get(one.id)
        if action is not None:  # unless it was deleted since
            catalogued = episodes.get(one.catalogued) if one.catalogued is not None else None
            action.catalogued = catalogued  # type: ignore[attr-defined]
            shown.append(action)
    return shown


def _shown(subscriptions: QuerySet[Subscription]) -> QuerySet[Subscription]:
    """`subscriptions` with their feed's title, link and artwork, and their pending deletion."""
    pending = Deletion.objects.filter(
        subscription=OuterRef("pk"), status=Deletion.Status.PENDING
    ).values("pk")[:1]
    return subscriptions_with_feed_details(subscriptions).annotate(
        pending_deletion=Subquery(pending)
    )


def podcasts_page(*, user: Any, query: str, status: str, page: Any) -> Page[Subscription]:
    """One page of the user's subscriptions, by title (else feed URL): `query` finds it in
    either; `status` is unsubscribed, not-deleted, deleted, all, else subscribed."""
    subscriptions = Subscription.objects.filter(user=user)
    if status == "unsubscribed":
        subscriptions = subscriptions.filter(is_subscribed=False, deleted__isnull=True)
    elif status == "not-deleted":
        subscriptions = subscriptions.filter(deleted__isnull=True)
    elif status == "deleted":
        subscriptions = subscriptions.filter(deleted__isnull=False)
    elif status != "all":
        subscriptions = subscriptions.filter(is_subscribed=True, deleted__isnull=True)
    titled = subscriptions_with_feed_title(subscriptions)
    if query:
        titled = titled.filter(Q(feed_url__icontains=query) | Q(feed_title__icontains=query))
    # The page is cut by title over the ids alone, then only its 50 are read whole: reading every
    # subscription's artwork and website to sort them would cost three times as much.
    by_title = Lower(Coalesce(NullIf("feed_title", Value("")), "feed_url"))
    ordered = titled.order_by(by_title, "id").values_list("pk", flat=True)
    found: Any = Paginator(ordered, PODCASTS_PER_PAGE).get_page(page)
    ids = list(found.object_list)
    shown = {
        sub.pk: sub for sub in _with_feed_health(_shown(Subscription.objects.filter(pk__in=ids)))
    }
    found.object_list = [shown[pk] for pk in ids if pk in shown]
    return found


def _with_feed_health(subscriptions: QuerySet[Subscription]) -> list[Subscription]:
    """`subscriptions`, each with `feed_health`, whether its feed can be fetched (docs/web.md,
    "When a feed can't be fetched"), read in the same query."""
    found = list(subscriptions_with_feed_health(subscriptions))
    for sub in found:
        sub.feed_health = feed_health(sub)  # type: ignore[attr-defined]
    return found


def podcasts_exist(*, user: Any) -> bool:
    """Whether the user has any subscription at all, deleted ones included."""
    return Subscription.objects.filter(user=user).exists()


@dataclass
class PodcastToDelete:
    """What deleting a subscription takes with it: its episode actions, by any URL it has had."""

    subscription: Subscription
    actions: int


def podcast_to_delete(*, user: Any, guid: uuid.UUID) -> PodcastToDelete:
    """The user's subscription that has or had `guid`, with its title and pending deletion,
    and how many episode actions its deletion would delete (as
    episodes.services.actions_delete_of_subscriptions counts them), in two queries. Another
    user's is not found."""
    sub = _shown(Subscription.objects.filter(user=user, guid_history__guid=guid)).first()
    if sub is None:
        raise NotFound()
    digests = subscription_feed_digests(subscription_ids=[sub.pk])
    actions = _counted(EpisodeAction.objects.filter(user=user, podcast_key__in=digests))
    return PodcastToDelete(subscription=sub, actions=actions)


def _counted(rows: QuerySet[Any]) -> int:
    """How many `rows` there are, up to COUNTED_AT_MOST + 1 (the counted filter shows that
    as "more than COUNTED_AT_MOST"), reading no more of them."""
    return rows.values("pk")[: COUNTED_AT_MOST + 1].count()


@dataclass
class PodcastDetail:
    subscription: Subscription
    guids: list[SubscriptionGuid]
    feeds: list[SubscriptionFeed]
    deletions: list[Deletion]
    history: Page[EpisodeAction]
    episodes: list["EpisodePlayed"] = field(default_factory=list)


@dataclass
class EpisodePlayed:
    """One of a podcast's newest episodes, with the latest action on it from each device."""

    episode: FeedEpisode
    actions: list[EpisodeAction] = field(default_factory=list)


def podcast_detail(*, user: Any, guid: uuid.UUID, page: Any) -> PodcastDetail:
    """The user's subscription that has or had `guid`, with its histories, its latest
    deletions, the newest episodes of its feed, and one page of its listening history: the
    latest action on each episode any of its feed URLs has actions on, the one played last
    first. Another user's is not found."""
    mine = _shown(Subscription.objects.filter(user=user, guid_history__guid=guid))
    found = _with_feed_health(mine.order_by("pk")[:1])
    if not found:
        raise NotFound()
    sub = found[0]
    feeds = list(SubscriptionFeed.objects.filter(subscription=sub).order_by("assigned", "id"))
    keys = [feed.key_digest for feed in feeds]
    on_podcast = EpisodeAction.objects.filter(user=user, podcast_key__in=keys).select_related(
        "device"
    )
    return PodcastDetail(
        subscription=sub,
        guids=list(SubscriptionGuid.objects.filter(subscription=sub).order_by("assigned", "id")),
        feeds=feeds,
        deletions=list(Deletion.objects.filter(subscription=sub).order_by("-requested")[:5]),
        history=_history_of(user=user, keys=keys, page=page),
        episodes=_episodes_played(keys=keys, on_podcast=on_podcast),
    )


def _history_of(*, user: Any, keys: Collection[str], page: Any) -> Page[EpisodeAction]:
    """One page of the latest action on each episode of one podcast (its feed URLs' `keys`)."""
    # Every one of the keys is this one podcast: an episode under two of them is one episode.
    played = _each_episode_once(
        _latest_of_each_episode(user=user, keys=keys), dict.fromkeys(keys, "podcast")
    )
    found: Any = Paginator(played.get("podcast", []), PODCAST_HISTORY_PER_PAGE).get_page(page)
    found.object_list = _actions_shown(list(found.object_list))
    return found


def _episodes_played(
    *, keys: list[str], on_podcast: QuerySet[EpisodeAction]
) -> list[EpisodePlayed]:
    """The podcast's newest episodes in the catalogue of its feed URLs (`keys`), each with the
    latest action of each device on it; in three queries."""
    # A feed that moved has a catalogue at each URL, with the same items: each shown once, the
    # row the match picks (the latest stored).
    episodes: list[FeedEpisode] = []
    listed: set[str] = set()
    for episode in FeedEpisode.objects.filter(feed__key_digest__in=keys).order_by(
        F("published").desc(nulls_last=True), "-id"
    )[: PODCAST_EPISODES * len(keys)]:
        identity = episode.guid or episode.url_key
        if identity not in listed and len(episodes) < PODCAST_EPISODES:
            listed.add(identity)
            episodes.append(episode)
    if not episodes:
        return []
    guids = [e.guid for e in episodes if e.guid]
    url_keys = [k for e in episodes for k in (e.url_key, e.earlier_url_key) if k]
    # Those that may be on these episodes, by an index-friendly test; then matched exactly.
    maybe = on_podcast.filter(Q(guid__in=guids) | Q(episode_key__in=url_keys)).order_by(
        "-timestamp", "-id"
    )[:PODCAST_EPISODE_ACTIONS]
    played = {episode.pk: EpisodePlayed(episode=episode) for episode in episodes}
    seen: set[tuple[int, int | None]] = set()
    for action in maybe.annotate(catalogued_id=RawSQL(episode_match_sql(_ACTIONS), [])):
        shown = played.get(action.catalogued_id)
        if shown is not None and (shown.episode.pk, action.device_id) not in seen:
            seen.add((shown.episode.pk, action.device_id))
            shown.actions.append(action)
    return list(played.values())


def devices_page(*, user: Any, page: Any) -> Page[Device]:
    """One page of the user's devices, the one that synced last first, each with the app of its
    latest sync (gpodder.selectors.devices_with_last_app)."""
    devices = Device.objects.filter(user=user).order_by("-last_used", "device_id")
    return Paginator(devices_with_last_app(devices), DEVICES_PER_PAGE).get_page(page)


def device_of(*, user: Any, device_id: str) -> Device:
    device = Device.objects.filter(user=user, device_id=device_id).first()
    if device is None:
        raise NotFound()
    return device


@dataclass
class DeviceDetail:
    device: Device
    sync: SyncDiagnostics


def device_detail(*, user: Any, device_id: str) -> DeviceDetail:
    """The user's device with what its last syncs did (docs/web.md, "Devices"), in two
    queries. Another user's is not found."""
    device = device_of(user=user, device_id=device_id)
    return DeviceDetail(device=device, sync=device_sync_diagnostics(device=device))


@dataclass
class DeviceToRemove:
    """What removing a device takes with it, and what stays."""

    device: Device
    spellings: int  # the feed URL spellings it sent, which go with it
    actions: int  # its episode actions, which stay, on a removed device


def device_to_remove(*, user: Any, device_id: str) -> DeviceToRemove:
    device = device_of(user=user, device_id=device_id)
    return DeviceToRemove(
        device=device,
        spellings=DeviceFeed.objects.filter(device=device).count(),
        actions=_counted(EpisodeAction.objects.filter(user=user, device=device)),
    )


@dataclass
class AppPasswordToRevoke:
    """An app password, and the device its app syncs as on the Nextcloud paths, if any."""

    app_password: AppPassword
    device: Device | None


def app_password_to_revoke(*, user: Any, app_password_id: int) -> AppPasswordToRevoke:
    """The user's app password, with the device named after it (nextcloud.services), in two
    queries. Another user's is not found."""
    found = AppPassword.objects.filter(user=user, pk=app_password_id).first()
    if found is None:
        raise NotFound()
    device = Device.objects.filter(user=user, device_id=device_id_for(found.name)).first()
    return AppPasswordToRevoke(app_password=found, device=device)


@dataclass
class PodcastHistory:
    """A podcast in the listening history: how many of its episodes have an action, and the
    latest action on each of the latest HISTORY_EPISODES_PER_PODCAST of them."""

    podcast: str  # its feed URL, as the latest action named it
    key: str  # that URL's key, which names the history of a podcast without a subscription
    subscription: Subscription | None
    episodes: int = 0
    actions: list[EpisodeAction] = field(default_factory=list)

    @property
    def more(self) -> int:
        """The episodes with an action not shown here, but on the podcast's own page."""
        return self.episodes - len(self.actions)


@dataclass
class _Played:
    """A podcast the user has actions on: the feed URL keys they name it by, and its latest
    action's timestamp (with the highest id, so that two at the same time keep one order)."""

    latest: tuple[datetime, int]
    keys: list[str] = field(default_factory=list)


def history_page(*, user: Any, page: Any) -> Page[PodcastHistory]:
    """One page of the user's listening history, by podcast, the podcast played last first;
    for each, how many episodes it has with an action, and the latest action on each of the
    latest, named from its feed's catalogue when the feed check has it. In a constant number of
    queries however long the history: the podcasts are read grouped, and only the page's
    podcasts' actions are read whole."""
    # A podcast is its subscription (whichever of its feed URLs an action names), else its URL.
    podcast_of: dict[str, Hashable] = {
        key: ("subscription", owner)
        for key, owner in SubscriptionFeed.objects.filter(user=user).values_list(
            "key_digest", "subscription_id"
        )
    }
    played: dict[Hashable, _Played] = {}
    for key, timestamp, last in (
        EpisodeAction.objects.filter(user=user)
        .values("podcast_key")
        .annotate(timestamp=Max("timestamp"), last=Max("id"))
        .values_list("podcast_key", "timestamp", "last")
        .order_by()
    ):
        shown = played.setdefault(podcast_of.get(key, ("feed", key)), _Played((timestamp, last)))
        shown.keys.append(key)
        shown.latest = max(shown.latest, (timestamp, last))
    ordered = sorted(played.items(), key=lambda item: item[1].latest, reverse=True)
    found: Any = Paginator(ordered, HISTORY_PODCASTS_PER_PAGE).get_page(page)
    keys = [key for _, shown in found.object_list for key in shown.keys]
    episodes = _each_episode_once(_latest_of_each_episode(user=user, keys=keys), podcast_of)
    subscriptions = {
        sub.pk: sub
        for sub in _shown(
            Subscription.objects.filter(
                pk__in=[owner for (kind, owner), _ in found.object_list if kind == "subscription"]
            )
        )
    }
    latest = [episodes.get(podcast, []) for podcast, _ in found.object_list]
    whole = {
        action.pk: action
        for action in _actions_shown(
            [one for each in latest for one in each[:HISTORY_EPISODES_PER_PODCAST]]
        )
    }
    podcasts = []
    for ((kind, owner), _), each in zip(found.object_list, latest, strict=True):
        actions = [whole[one.id] for one in each[:HISTORY_EPISODES_PER_PODCAST] if one.id in whole]
        if not actions:  # its actions were deleted since they were counted
            continue
        podcasts.append(
            PodcastHistory(
                podcast=actions[0].podcast,
                key=actions[0].podcast_key,
                subscription=subscriptions.get(owner) if kind == "subscription" else None,
                episodes=len(each),
                actions=actions,
            )
        )
    found.object_list = podcasts
    return found


@dataclass
class FeedHistory:
    """The listening history of a podcast the user has actions on and no subscription to, named
    by its feed URL's key: one page of the latest action on each of its episodes. Or the
    subscription that has that URL, whose own page shows it."""

    podcast: str
    key: str
    history: Page[EpisodeAction] | None = None
    subscription: Subscription | None = None


def feed_history(*, user: Any, key: str, page: Any) -> FeedHistory:
    """The history of the podcast whose feed URL has the key `key`, in four queries. A key the
    user has no action on (another user's podcast too) is not found."""
    owned = (
        SubscriptionFeed.objects.filter(user=user, key_digest=key)
        .select_related("subscription")
        .first()
    )
    if owned is not None:
        return FeedHistory(podcast=owned.url, key=key, subscription=owned.subscription)
    history = _history_of(user=user, keys=[key], page=page)
    if not history.object_list:
        raise NotFound()
    return FeedHistory(podcast=history.object_list[0].podcast, key=key, history=history)


def _when(value: Any) -> str | None:
    return format_timestamp(value) if value is not None else None


def _json(value: Any) -> bytes:
    return orjson.dumps(value)


def everything(*, user: Any) -> Iterator[bytes]:
    """Everything the service holds about the user, as one JSON document, written piece by
    piece so that a long history is never held in memory whole (docs/web.md, "Your data")."""
    yield b'{"exported":' + _json(format_timestamp(clock.now()))
    yield b',"account":' + _json(
        {
            "username": user.get_username(),
            "date_joined": _when(getattr(user, "date_joined", None)),
        }
    )
    yield b',"subscriptions":['
    subscriptions = (
        subscriptions_with_feed_details(Subscription.objects.filter(user=user))
        .prefetch_related("guid_history", "feed_history")
        .order_by("id")
    )
    for index, sub in enumerate(subscriptions):
        yield (b"," if index else b"") + _json(
            {
                "guid": str(sub.guid),
                "feed_url": sub.feed_url,
                "title": xml_text(getattr(sub, "feed_title", "")) or None,
                "is_subscribed": sub.is_subscribed,
                "deleted": _when(sub.deleted),
                "created": _when(sub.created),
                "subscription_changed": _when(sub.subscription_changed),
                "guid_changed": _when(sub.guid_changed),
                "guid_history": [
                    {
                        "guid": str(g.guid),
                        "assigned": _when(g.assigned),
                        "replaced": _when(g.replaced),
                    }
                    for g in sub.guid_history.all()
                ],
                "feed_url_history": [
                    {"url": f.url, "assigned": _when(f.assigned)} for f in sub.feed_history.all()
                ],
            }
        )
    yield b'],"devices":['
    devices = Device.objects.filter(user=user).order_by("device_id")
    spellings: dict[int, list[dict[str, Any]]] = {}
    for feed in DeviceFeed.objects.filter(device__user=user).order_by("device_id", "id"):
        spellings.setdefault(feed.device_id, []).append({"url": feed.url, "sent": _when(feed.sent)})
    events: dict[int, list[dict[str, Any]]] = {}
    for event in DeviceSyncEvent.objects.filter(device__user=user).order_by("device_id", "-seq"):
        events.setdefault(event.device_id, []).append(_sync_event(event))
    for index, device in enumerate(devices):
        yield (b"," if index else b"") + _json(
            {
                "id": device.device_id,
                "caption": device.caption,
                "type": device.type,
                "created": _when(device.created),
                "last_used": _when(device.last_used),
                "feed_url_spellings": spellings.get(device.pk, []),
                "sync_events": events.get(device.pk, []),
            }
        )
    yield b'],"episode_actions":['
    first = True
    for (
        podcast,
        episode,
        title,
        guid,
        action,
        timestamp,
        received,
        device_id,
        *play,
    ) in _export_actions(user):
        item: dict[str, Any] = {
            "podcast": podcast,
            "episode": episode,
            "action": action,
            "timestamp": _when(timestamp),
            "received": _when(received),
            "device": device_id,
        }
        if title:  # the episode's name in its feed, when a feed check has it
            item["episode_title"] = xml_text(title)
        if guid:
            item["guid"] = guid
        if action == EpisodeAction.Action.PLAY:
            item.update(
                {
                    k: v
                    for k, v in zip(("started", "position", "total"), play, strict=True)
                    if v is not None
                }
            )
        yield (b"" if first else b",") + _json(item)
        first = False
    yield b"]}"


def _sync_event(event: DeviceSyncEvent) -> dict[str, Any]:
    """A device's sync event in the export, the newest first (docs/web.md, "Your data")."""
    return {
        "at": _when(event.at),
        "kind": event.kind,
        "data": event.data,
        "protocol": event.protocol,
        "user_agent": event.agent,
        "count": event.count,
        "refused": event.refused,
        "reason": event.reason,
        "detail": event.detail,
    }


def _export_actions(user: Any) -> Iterator[tuple[Any, ...]]:
    """The user's actions for the export, oldest received first, EXPORT_CHUNK at a time, each
    chunk one query from where the last ended (the index on user, received and id): no cursor
    is held open between them, so a long history neither sits in memory whole nor needs a
    server-side cursor (which a pooler in transaction mode cannot keep)."""
    actions = (
        EpisodeAction.objects.filter(user=user)
        .annotate(episode_title=RawSQL(episode_title_sql(_ACTIONS), []))
        .order_by("received", "id")
    )
    fields = (
        "podcast",
        "episode",
        "episode_title",
        "guid",
        "action",
        "timestamp",
        "received",
        "device__device_id",
        "started",
        "position",
        "total",
    )
    after: Q = Q()
    while True:
        chunk = list(actions.filter(after).values_list(*fields, "id")[:EXPORT_CHUNK])
        for *row, _ in chunk:
            yield tuple(row)
        if len(chunk) < EXPORT_CHUNK:
            return
        received, last = chunk[-1][6], chunk[-1][-1]
        after = Q(received__gt=received) | Q(received=received, id__gt=last)


def opml_feeds(*, user: Any) -> Iterator[opml.OpmlFeed]:
    """The user's current subscriptions for an OPML export, titled when a feed check knows."""
    titled = subscriptions_titled(subscription_current(user=user))
    found = titled.values_list("feed_url", "feed_title")  # type: ignore[misc]
    for url, title in found.iterator(chunk_size=EXPORT_CHUNK):
        yield opml.OpmlFeed(url=url, title=title or None)
