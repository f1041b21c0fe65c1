"""Reads of the gpodder API: devices, and subscriptions as a device should see them."""

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db import transaction
from django.db.models import OuterRef, QuerySet, Subquery

from gpodder.models import Device, DeviceFeed
from gpodder.sync import sync_timestamp
from subscriptions.models import Subscription
from subscriptions.selectors import subscription_current
from subscriptions.services import hold_user_writes


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


@dataclass(frozen=True)
class Changes:
    add: list[str]
    remove: list[str]
    timestamp: int


def subscription_changes(*, user: Any, device: Device, since: int) -> Changes:
    """The user's subscriptions whose state changed at or after `since` (whole seconds), split
    into the subscribed (`add`) and the unsubscribed or deleted (`remove`), each URL spelled as
    the device last sent it; and the timestamp to send back (gpodder.sync)."""
    since_time = datetime.fromtimestamp(since, UTC)
    with transaction.atomic():
        latest = hold_user_writes(user.pk)
        changed = Subscription.objects.filter(user=user, changed__gte=since_time).order_by("id")
        rows = list(
            _spelled(device, changed).values_list("feed_url", "is_subscribed", "deleted", "spelled")
        )
    add: list[str] = []
    remove: list[str] = []
    for feed_url, is_subscribed, deleted, spelled in rows:
        (add if is_subscribed and deleted is None else remove).append(spelled or feed_url)
    return Changes(add=add, remove=remove, timestamp=sync_timestamp(latest))


def subscription_urls(*, user: Any, device: Device | None) -> list[str]:
    """The user's current subscriptions' URLs, as `device` spells them (the simple API)."""
    current = subscription_current(user=user)
    if device is None:
        return list(current.values_list("feed_url", flat=True))
    rows = _spelled(device, current).values_list("feed_url", "spelled")
    return [spelled or feed_url for feed_url, spelled in rows]
