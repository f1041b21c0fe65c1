"""Reads of the gpodder API: devices, and subscriptions as a device should see them."""

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple

from django.db.models import OuterRef, QuerySet, Subquery

from gpodder.models import Device, DeviceFeed
from subscriptions.models import Subscription
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


def subscription_changes(*, user: Any, device: Device, since: int) -> list[Answered]:
    """The user's subscriptions whose state changed at or after `since` (whole seconds since the
    epoch), in creation order, as `device` is answered them."""
    changed = Subscription.objects.filter(
        user=user, changed__gte=datetime.fromtimestamp(since, UTC)
    ).order_by("id")
    rows = _spelled(device, changed).values_list("feed_url", "is_subscribed", "deleted", "spelled")
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
