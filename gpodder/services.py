"""Writes of the gpodder API: devices, and the subscription changes a device sends, applied by
the subscriptions app's own services (docs/gpodder-api.md)."""

import re
import unicodedata
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, cast

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.db.models import Count, Field, Q

from core import clock
from core.db import sql
from core.db.hints import unflushed
from core.db.locks import Beside
from core.exceptions import InvalidInput, NotAuthorized, NotFound
from gpodder import selectors
from gpodder.feedurls import sanitized
from gpodder.models import Device, DeviceFeed
from gpodder.sync import settled_timestamp, sync_timestamp
from subscriptions import feeds
from subscriptions.locks import (
    hold_user_writes,
    hold_user_writes_beside,
    lock_user_writes,
    lock_user_writes_after,
)
from subscriptions.selectors import (
    FeedReached,
    subscription_current,
    subscription_feeds_reached,
)
from subscriptions.services import AddEntry, subscription_add_many, subscription_unsubscribe_many

_DEVICE_ID = re.compile(r"[A-Za-z0-9_.\-]{1,64}", re.ASCII)
DEVICE_TYPES = [choice.value for choice in Device.Type]
# How far behind a device's recorded last use may be.
LAST_USE_PRECISION = timedelta(minutes=1)


def device_id_valid(device_id: object) -> bool:
    return isinstance(device_id, str) and _DEVICE_ID.fullmatch(device_id) is not None


def device_id_checked(device_id: str) -> str:
    if not _DEVICE_ID.fullmatch(device_id):
        raise InvalidInput(
            "a device id is 1 to 64 ASCII letters, digits, '_', '.' or '-'",
            errors={"device": ["Must be 1 to 64 ASCII letters, digits, '_', '.' or '-'."]},
        )
    return device_id


def device_touch(*, user: Any, device_id: str) -> Device:
    """The user's device `device_id`, created the first time a request names it (no caption,
    type other), its last use brought up to now when it is over LAST_USE_PRECISION old.

    A sync round names its device in every request: reading it is one query, and a write
    (a commit to wait for) happens at most once in LAST_USE_PRECISION.
    """
    device_id_checked(device_id)
    return devices_touch(user=user, device_ids=[device_id])[device_id]


def devices_touch(
    *,
    user: Any,
    device_ids: Collection[str],
    found: list[Device] | None = None,
    captions: Mapping[str, str] | None = None,
) -> dict[str, Device]:
    """device_touch for several devices at once (the ones an upload's episode actions name), in
    as many queries as for one; the ids must be valid. New devices are made all or none: none
    when they would take the user past MAX_DEVICES (InvalidInput naming it). `found`: those of
    them read already (device_beside), which are not read again. `captions`: what a device made
    now is called, by id (never a caption the person gave one since)."""
    if not device_ids:
        return {}
    now = clock.now()
    if found is None:
        found = _devices_found(user, device_ids)
    devices = {device.device_id: device for device in found}
    missing = [device_id for device_id in device_ids if device_id not in devices]
    if missing:
        devices.update(
            _devices_create(user=user, device_ids=missing, now=now, captions=captions or {})
        )
    stale = [d.pk for d in devices.values() if d.last_used < now - LAST_USE_PRECISION]
    if stale:
        with unflushed():
            Device.objects.filter(pk__in=stale).update(last_used=now)
    return devices


_DEVICE_FIELDS = ("id", "user_id", "device_id", "last_used", "pulled_up_to")
_DEVICE_BY_ID = (
    f"SELECT {', '.join(_DEVICE_FIELDS)} FROM {Device._meta.db_table}"
    " WHERE user_id = %s AND device_id = %s"
)
_DEVICE_COLUMNS = sql.Columns(*(cast(Field, Device._meta.get_field(n)) for n in _DEVICE_FIELDS))


def _devices_found(user: Any, device_ids: Collection[str]) -> list[Device]:
    """Those of the user's devices that exist. One device, a sync's every request, is one
    prepared lookup by its unique key (core.db.sql)."""
    if len(device_ids) == 1:
        rows = sql.fetch(_DEVICE_BY_ID, [user.pk, *device_ids], _DEVICE_COLUMNS, prepare=True)
        return [Device.from_db(None, _DEVICE_FIELDS, row) for row in rows]
    return list(
        Device.objects.filter(user=user, device_id__in=list(device_ids)).only(
            "device_id", "last_used", "pulled_up_to"
        )
    )


def device_beside(
    *, user: Any, device_id: str, joined: str = "", select: tuple[str, ...] = ()
) -> Beside:
    """The user's device `device_id`, to be read with a hold (core.db.locks.hold_then_read):
    a sync's device and its clock in one round trip. `joined` joins more to it (alias d), whose
    columns `select` names come after the device's."""
    return Beside(
        select=", ".join([*(f"d.{name}" for name in _DEVICE_FIELDS), *select]),
        source=f"{Device._meta.db_table} d ON d.user_id = %s AND d.device_id = %s {joined}",
        params=[user.pk, device_id],
        columns=sql.Columns(*_DEVICE_COLUMNS.fields, *([None] * len(select))),
    )


def device_of(row: tuple[Any, ...] | None) -> list[Device]:
    """The device a device_beside read found, as devices_touch takes it (none: not made yet)."""
    if row is None:
        return []
    return [Device.from_db(None, _DEVICE_FIELDS, row[: len(_DEVICE_FIELDS)])]


def _devices_create(
    *, user: Any, device_ids: list[str], now: datetime, captions: Mapping[str, str]
) -> dict[str, Device]:
    """Make the user's devices `device_ids`, unless the user would then have more than
    MAX_DEVICES. Counted under the lock of the user's row, so that two requests at the limit
    cannot both add one; in a statement after the lock's, since one that waited for the lock
    would count what was committed before it waited. NotAuthorized when the user is gone or
    inactive (subscriptions.locks.lock_user_writes)."""
    limit = settings.MAX_DEVICES
    with transaction.atomic():
        users = get_user_model().objects.select_for_update(no_key=True)
        if users.filter(pk=user.pk, is_active=True).values_list("pk").first() is None:
            raise NotAuthorized()
        held, made_meanwhile = _devices_counted(user=user, device_ids=device_ids)
        new = len(device_ids) - made_meanwhile
        if new and held + new > limit:
            message = (
                f"a new device would take the account past {limit} devices, the most it may "
                "have (MAX_DEVICES): remove one on the devices page first"
            )
            raise InvalidInput(message, errors={"device": [message]})
        # Made meanwhile by another first request of the same device: the database keeps one.
        created = Device.objects.bulk_create(
            [
                Device(
                    user=user,
                    device_id=device_id,
                    caption=captions.get(device_id, ""),
                    created=now,
                    last_used=now,
                )
                for device_id in device_ids
            ],
            update_conflicts=True,
            unique_fields=["user", "device_id"],
            update_fields=["last_used"],
        )
    return {device.device_id: device for device in created}


def _devices_counted(*, user: Any, device_ids: list[str]) -> tuple[int, int]:
    """How many devices the user has, and how many of them are `device_ids`."""
    counts = Device.objects.filter(user=user).aggregate(
        held=Count("pk"), named=Count("pk", filter=Q(device_id__in=device_ids))
    )
    return counts["held"], counts["named"]


def device_caption_checked(caption: str) -> str:
    """A device's caption (its name on the pages), refused with control characters: Unicode's
    Cc, and the lone surrogates (Cs) JSON can carry, as every name the service keeps."""
    if any(unicodedata.category(ch) in ("Cc", "Cs") for ch in caption):
        message = "a device's caption (its name) must not contain control characters"
        raise InvalidInput(message, errors={"caption": [message]})
    return caption


def device_update(
    *, user: Any, device_id: str, caption: str | None = None, type: str | None = None
) -> Device:
    """Set the device's caption and type, creating it when new."""
    if type is not None and type not in DEVICE_TYPES:
        message = f"type must be one of {', '.join(DEVICE_TYPES)}"
        raise InvalidInput(message, errors={"type": [message]})
    if caption is not None:
        device_caption_checked(caption)
    device = device_touch(user=user, device_id=device_id)
    changed = {
        name: value for name, value in (("caption", caption), ("type", type)) if value is not None
    }
    # Only while the account stands: a caption is the account's writing too (NotAuthorized).
    if changed and not Device.objects.filter(pk=device.pk, user__is_active=True).update(**changed):
        raise NotAuthorized()
    return device


def device_remove(*, user: Any, device_id: str) -> None:
    """Remove the user's device with what it alone held: the spellings of the feed URLs it sent.
    Its episode actions stay, without a device: they are the user's listening history. The app
    comes back as a new device the next time it syncs."""
    deleted, _ = Device.objects.filter(user=user, device_id=device_id).delete()
    if not deleted:
        raise NotFound()


@dataclass
class Upload:
    """What a device's upload answers: the timestamp to send back, and the URLs it should
    rewrite, as [sent, used] ("" for one that cannot be used)."""

    timestamp: int
    update_urls: list[list[str]] = field(default_factory=list)


def device_stands() -> str:
    """SQL, true while the device (its id the one parameter) and its account stand, the account
    active; the account's row is then locked until the transaction ends, against its deletion,
    which locks that row before anything else (FOR KEY SHARE, which a sign-in's or a
    deactivation's update does not wait for, nor another read's).

    The condition of a write made on a read path, which holds no lock of the user's writes
    (subscriptions.locks.lock_user_writes): it writes nothing for a device or account deleted
    or deactivated meanwhile, and waits for a deletion under way, where it would fail on the
    rows' foreign keys. Taken only when there is something to note, which is seldom."""
    locked = " FOR KEY SHARE OF account" if connection.vendor == "postgresql" else ""
    return (
        f"EXISTS (SELECT 1 FROM {get_user_model()._meta.db_table} account"
        f" JOIN {Device._meta.db_table} device ON device.user_id = account.id"
        f" WHERE device.id = %s AND account.is_active{locked})"
    )


def _remember_spellings(*, device: Device, spellings: dict[int, str], replace: bool) -> None:
    """Keep `spellings` (URL history row id: URL) as the device's; `replace` those it had (under
    the lock of the user's writes), else add them while the device stands (device_stands)."""
    now = clock.now()
    if replace:
        rows = [
            DeviceFeed(device=device, feed_id=feed, url=url, sent=now)
            for feed, url in spellings.items()
        ]
        DeviceFeed.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["device", "feed"],
            update_fields=["url", "sent"],
        )
    else:
        sql.insert(
            DeviceFeed,
            {"feed": list(spellings), "url": list(spellings.values())},
            same={"device": device.pk, "sent": now},
            where=device_stands(),
            where_params=[device.pk],
            ignore_conflicts=True,
        )


def _remember_answered(*, user: Any, device: Device, answered: list[selectors.Answered]) -> None:
    """A URL a device is answered without a spelling of its own becomes its spelling: the app
    now holds it, and must keep being answered in it (a later move or variant must not reach
    it as another podcast)."""
    urls = [item.url for item in answered if not item.spelled]
    if not urls:
        return
    digests = {url: feeds.feed_key_digest(url) for url in urls}
    reached = subscription_feeds_reached(user=user, digests=set(digests.values()))
    spellings = {
        reached[digest].feed_id: url for url, digest in digests.items() if digest in reached
    }
    _remember_spellings(device=device, spellings=spellings, replace=False)


@dataclass(frozen=True)
class Changes:
    add: list[str]
    remove: list[str]
    timestamp: int
    device: Device


def subscription_pull(*, user: Any, device_id: str, since: int, capped: bool = False) -> Changes:
    """The subscriptions changed at or after `since` (whole seconds), split into the subscribed
    (`add`) and the unsubscribed or deleted (`remove`), each in the spelling of the device
    `device_id` (made on first use: device_touch); and the timestamp to send back (gpodder.sync.
    settled_timestamp: it moves only when something changed). The device remembers that
    timestamp, for its next upload's (subscription_upload), when it moved. `capped`: `since` no
    later than that remembered timestamp (apps that keep their own clock as their next `since`).

    The clock is read first, then the writes under way are waited for (hold_user_writes): a
    write that had not begun by then stamps its changes after that clock, and the ones waited
    for are committed before the changes are read. On PostgreSQL that is one statement, which
    reads the device too, no transaction kept open (SQLite serialises its transactions instead,
    and the device is read, and made, before its transaction).
    """
    device_id_checked(device_id)
    if connection.vendor == "postgresql":
        now = clock.now()
        latest, row = hold_user_writes_beside(
            user.pk, device_beside(user=user, device_id=device_id)
        )
        device = devices_touch(user=user, device_ids=[device_id], found=device_of(row))[device_id]
        timestamp, answered = _changes(user, device, since, capped, latest=latest, now=now)
    else:
        device = device_touch(user=user, device_id=device_id)
        now = clock.now()
        with transaction.atomic():
            latest = hold_user_writes(user.pk)
            timestamp, answered = _changes(user, device, since, capped, latest=latest, now=now)
    _remember_answered(user=user, device=device, answered=answered)
    if device.pulled_up_to != timestamp:  # only when something changed (gpodder.sync)
        with unflushed(first=device.pulled_up_to is None):
            Device.objects.filter(pk=device.pk).update(pulled_up_to=timestamp)
        device.pulled_up_to = timestamp
    return Changes(
        add=[item.url for item in answered if item.current],
        remove=[item.url for item in answered if not item.current],
        timestamp=timestamp,
        device=device,
    )


def _changes(
    user: Any, device: Device, since: int, capped: bool, *, latest: Any, now: datetime
) -> tuple[int, list[selectors.Answered]]:
    """The timestamp of a pull whose hold read `latest`, the clock read `now` before it, and
    the changes it answers."""
    if capped and device.pulled_up_to is not None:
        since = min(since, device.pulled_up_to)
    timestamp = settled_timestamp(latest, now=now, kept=device.pulled_up_to)
    return timestamp, selectors.subscription_changes(user=user, device=device, since=since)


def subscription_list(*, user: Any, device: Device | None) -> list[str]:
    """The simple API's GET: the current subscriptions' URLs, in the device's spellings."""
    answered = selectors.subscription_urls(user=user, device=device)
    if device is not None:
        _remember_answered(user=user, device=device, answered=answered)
    return [item.url for item in answered]


class _Sent:
    """The URLs of one request, sanitised, with what to tell the device about each."""

    def __init__(self, *lists: list[str]):
        self.rewritten: dict[str, str] = {}
        self.used: list[tuple[str, str]] = []  # (sent, used) of each usable URL
        for urls in lists:
            for sent in urls:
                used = sanitized(sent)
                if used != sent:
                    self.rewritten[sent] = used or ""
                if used is not None:
                    self.used.append((sent, used))
        self.digests = {used: feeds.feed_key_digest(used) for _, used in self.used}

    def usable(self, urls: list[str]) -> list[str]:
        wanted = set(urls)
        return [used for sent, used in self.used if sent in wanted]

    def reached(self, user: Any) -> dict[str, FeedReached]:
        return subscription_feeds_reached(user=user, digests=set(self.digests.values()))

    def not_current(self, urls: list[str], reached: dict[str, FeedReached]) -> list[str]:
        """Those of `urls` that reach no current subscription: adding the others again would
        only mark them changed for every other device."""
        return [
            url
            for url in urls
            if (found := reached.get(self.digests[url])) is None or not found.current
        ]

    def remember_spellings(
        self, *, user: Any, device: Device, follows_update_urls: bool = False
    ) -> None:
        """Keep the spelling the device sent of each feed, and tell it of each feed that moved
        since (its current URL has another matching key). A device that `follows_update_urls`
        switches to the new URL, which then becomes its spelling; another keeps the old one."""
        reached = self.reached(user)
        spellings: dict[int, str] = {}
        for sent, used in self.used:
            found = reached.get(self.digests[used])
            if found is None:
                continue
            spellings[found.feed_id] = used
            if feeds.feed_key_digest(found.feed_url) != self.digests[used]:
                self.rewritten[sent] = found.feed_url
                if follows_update_urls:
                    spellings[found.feed_id] = found.feed_url
        _remember_spellings(device=device, spellings=spellings, replace=True)

    def update_urls(self) -> list[list[str]]:
        return [[sent, used] for sent, used in self.rewritten.items()]


def subscription_changes_check(*, add: list[str], remove: list[str]) -> None:
    """Refuse, before anything is stored, an upload over the limit or one naming a feed in both
    lists (by any spelling)."""
    _limit(len(add) + len(remove))
    added = {feeds.feed_key_digest(url): url for url in map(sanitized, add) if url}
    both = [url for url in map(sanitized, remove) if url and feeds.feed_key_digest(url) in added]
    if both:
        raise InvalidInput(f"{both[0]!r} is both added and removed")


def subscription_check_count(urls: list[str]) -> None:
    _limit(len(urls))


def _limit(count: int) -> None:
    limit = settings.MAX_OPML_ENTRIES
    if count > limit:
        raise InvalidInput(f"too many URLs, at most {limit} per request")


def subscription_upload(
    *,
    user: Any,
    device: Device,
    add: list[str],
    remove: list[str],
    follows_update_urls: bool = False,
) -> Upload:
    """Apply a device's changes: adds subscribe (or re-subscribe), removes unsubscribe (not a
    deletion); a URL that cannot be used is reported and left out, never failing the others.
    `follows_update_urls`: the app rewrites its URLs as the answer's update_urls say.

    Apps keep the upload's timestamp as their next `since` (AntennaPod, Kasts), in place of the
    one their pull before it answered: when anything changed since that pull's timestamp, before
    this upload's own changes, the answer is no later than that timestamp, so that the next
    pull brings what other devices changed in between. This upload's changes come again then,
    which is harmless.
    """
    subscription_changes_check(add=add, remove=remove)
    sent = _Sent(add, remove)
    with transaction.atomic():
        # What is read next stays true until the writes are done.
        _, before = lock_user_writes_after(user.pk)
        adding = sent.not_current(sent.usable(add), sent.reached(user))
        subscription_add_many(user=user, entries=[AddEntry(url) for url in adding])
        subscription_unsubscribe_many(user=user, urls=sent.usable(remove))
        sent.remember_spellings(user=user, device=device, follows_update_urls=follows_update_urls)
        timestamp = sync_timestamp(hold_user_writes(user.pk))
    pulled = device.pulled_up_to
    if pulled is not None and before is not None and before.timestamp() >= pulled:
        timestamp = min(timestamp, pulled)
    return Upload(timestamp=timestamp, update_urls=sent.update_urls())


def subscription_replace(*, user: Any, device: Device, urls: list[str]) -> list[str]:
    """The simple API's PUT: the device's whole list. Feeds not yet subscribed are added; current
    subscriptions the list does not reach are unsubscribed; the others are left as they are.
    Returns the URLs that cannot be used, which were left out."""
    _limit(len(urls))
    sent = _Sent(urls)
    with transaction.atomic():
        lock_user_writes(user.pk)  # what is read next stays true until the writes are done
        reached = sent.reached(user)
        listed = sent.usable(urls)
        added = subscription_add_many(
            user=user, entries=[AddEntry(url) for url in sent.not_current(listed, reached)]
        )
        kept = {found.subscription_id for found in reached.values()}
        kept |= {sub.pk for sub in added.success}
        dropped = subscription_current(user=user).exclude(pk__in=kept)
        subscription_unsubscribe_many(user=user, urls=dropped.values_list("feed_url", flat=True))
        sent.remember_spellings(user=user, device=device)
    return [url for url, used in sent.rewritten.items() if not used]
