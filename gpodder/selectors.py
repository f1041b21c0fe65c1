"""Reads of the gpodder API: devices, and subscriptions as a device should see them."""

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple, cast

from django.db import connection
from django.db.models import Field, OuterRef, QuerySet, Subquery

from core.db import sql
from gpodder.diagnostics import app_of, plural
from gpodder.models import Device, DeviceFeed, DeviceSyncEvent
from subscriptions.models import Subscription, SubscriptionFeed
from subscriptions.selectors import subscription_current


@dataclass(frozen=True)
class DeviceShown:
    id: str
    caption: str
    type: str
    subscriptions: int


def device_list(*, user: Any) -> list[DeviceShown]:
    """The user's devices, each with the user's number of current subscriptions (one sync
    group: every device has them all)."""
    count = subscription_current(user=user).count()
    devices = Device.objects.filter(user=user).order_by("device_id")
    return [DeviceShown(d.device_id, d.caption, d.type, count) for d in devices]


def device_ids(*, user: Any) -> list[str]:
    devices = Device.objects.filter(user=user).order_by("device_id")
    return list(devices.values_list("device_id", flat=True))


def _spelled(device: Device, subscriptions: QuerySet[Subscription]) -> QuerySet[Any]:
    """`subscriptions` with `spelled`: the URL `device` last sent for each (None: it sent none)."""
    last_sent = (
        DeviceFeed.objects.filter(device=device, feed__subscription=OuterRef("pk"))
        .order_by("-sent", "-id")
        .values("url")[:1]
    )
    return subscriptions.annotate(spelled=Subquery(last_sent))


class Answered(NamedTuple):
    """A subscription as a device is answered it: its URL in the device's spelling, and whether
    the device had one (else the subscription's current URL)."""

    url: str
    spelled: bool
    current: bool  # subscribed, not deleted


_SUBSCRIPTIONS = Subscription._meta.db_table
_FEEDS = SubscriptionFeed._meta.db_table
_DEVICE_FEEDS = DeviceFeed._meta.db_table
# The URL the device last sent for subscription `s`: one probe of the (device, feed) key per URL
# the subscription has had. The inner LIMIT keeps the planner from making it a join, which it
# did on a user's first sync, on statistics from before it, reading every spelling of the device
# for each subscription (bench/README.md, "gpodder.selectors.subscription_changes").
# (SQLite has no LATERAL, and plans the join that way.)
_SPELLED = {
    "postgresql": f"""(
        SELECT df.url FROM {_FEEDS} f CROSS JOIN LATERAL (
            SELECT url, sent, id FROM {_DEVICE_FEEDS}
            WHERE device_id = %s AND feed_id = f.id LIMIT 1
        ) df
        WHERE f.subscription_id = s.id ORDER BY df.sent DESC, df.id DESC LIMIT 1
    )""",
    "sqlite": f"""(
        SELECT df.url FROM {_FEEDS} f JOIN {_DEVICE_FEEDS} df ON df.feed_id = f.id
        WHERE df.device_id = %s AND f.subscription_id = s.id
        ORDER BY df.sent DESC, df.id DESC LIMIT 1
    )""",
}
_CHANGES = {
    vendor: f"""
        SELECT s.feed_url, s.is_subscribed, s.deleted, {spelled}
        FROM {_SUBSCRIPTIONS} s WHERE s.user_id = %s AND s.changed >= %s ORDER BY s.id
    """
    for vendor, spelled in _SPELLED.items()
}
# The generated column's own type: the GeneratedField prepares no value, and SQLite would compare
# a time written with its zone as text with the stored ones, and find none of the same second.
_CHANGED = cast(Field, Subscription._meta.get_field("changed").output_field)
_CHANGES_COLUMNS = sql.Columns(
    Subscription._meta.get_field("feed_url"),
    Subscription._meta.get_field("is_subscribed"),
    Subscription._meta.get_field("deleted"),
    DeviceFeed._meta.get_field("url"),
)


def subscription_changes(*, user: Any, device: Device, since: int) -> list[Answered]:
    """The user's subscriptions whose state changed at or after `since` (whole seconds since the
    epoch), in creation order, as `device` is answered them. Written out: an app's sync makes
    it every few minutes (core.db.sql)."""
    when = sql.param(_CHANGED, datetime.fromtimestamp(since, UTC))
    rows = sql.fetch(_CHANGES[connection.vendor], [device.pk, user.pk, when], _CHANGES_COLUMNS)
    return [
        Answered(spelled or url, spelled is not None, subscribed and deleted is None)
        for url, subscribed, deleted, spelled in rows
    ]


def subscription_urls(*, user: Any, device: Device | None) -> list[Answered]:
    """The user's current subscriptions, in creation order, as `device` is answered them (the
    simple API; without a device, their current URLs)."""
    current = subscription_current(user=user)
    if device is None:
        return [Answered(url, False, True) for url in current.values_list("feed_url", flat=True)]
    rows = _spelled(device, current).values_list("feed_url", "spelled")
    return [Answered(spelled or url, spelled is not None, True) for url, spelled in rows]


@dataclass(frozen=True)
class SyncDiagnostics:
    """What a device last did, from its latest sync events (docs/web.md, "Devices")."""

    events: list[DeviceSyncEvent]  # the newest first

    def _latest(self, kind: str, data: str | None = None) -> DeviceSyncEvent | None:
        return next(
            (e for e in self.events if e.kind == kind and (data is None or e.data == data)), None
        )

    @property
    def latest(self) -> DeviceSyncEvent | None:
        return self.events[0] if self.events else None

    @property
    def app(self) -> str:
        return app_of(self.events[0].agent) if self.events else ""

    @property
    def last_pull(self) -> DeviceSyncEvent | None:
        return self._latest(DeviceSyncEvent.Kind.PULL)

    @property
    def last_upload(self) -> DeviceSyncEvent | None:
        return self._latest(DeviceSyncEvent.Kind.UPLOAD)

    @property
    def last_sent(self) -> list[DeviceSyncEvent]:
        """What its last sync sent it: the latest pull of subscriptions and of episode
        actions."""
        pulls = (
            self._latest(DeviceSyncEvent.Kind.PULL, data)
            for data in (DeviceSyncEvent.Data.SUBSCRIPTIONS, DeviceSyncEvent.Data.EPISODE_ACTIONS)
        )
        return [pull for pull in pulls if pull is not None]

    @property
    def last_sent_words(self) -> str:
        """What its last sync sent it, as "5 subscription changes, 12 episode actions"."""
        return ", ".join(
            plural(pull.count, "subscription change")
            if pull.data == DeviceSyncEvent.Data.SUBSCRIPTIONS
            else plural(pull.count, "episode action")
            for pull in self.last_sent
        )

    @property
    def last_refusal(self) -> DeviceSyncEvent | None:
        """The latest request refused whole, or in part."""
        refused = (e for e in self.events if e.kind == DeviceSyncEvent.Kind.REFUSAL or e.refused)
        return next(refused, None)


def device_sync_diagnostics(*, device: Device) -> SyncDiagnostics:
    """The device's kept sync events, in one query."""
    return SyncDiagnostics(list(DeviceSyncEvent.objects.filter(device=device).order_by("-seq")))


def devices_with_last_app(devices: QuerySet[Device]) -> QuerySet[Device]:
    """`devices`, each with the User-Agent (`last_agent`) and protocol (`last_protocol`) of its
    latest sync event, in the same query (None: none kept)."""
    latest = DeviceSyncEvent.objects.filter(device=OuterRef("pk")).order_by("-seq")
    return devices.annotate(
        last_agent=Subquery(latest.values("agent")[:1]),
        last_protocol=Subquery(latest.values("protocol")[:1]),
    )
