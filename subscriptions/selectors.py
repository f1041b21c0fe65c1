"""Reads of subscriptions."""

import uuid
from typing import Any

from config.exceptions import Gone, NotFound
from subscriptions.models import Subscription


def subscription_by_guid(*, user: Any, guid: uuid.UUID, lock: bool = False) -> Subscription:
    """The user's subscription that has or had `guid`, in one query; `lock` locks its row.

    Another user's guid is not found, exactly like one that does not exist.
    """
    found = Subscription.objects.filter(user=user, guid_history__guid=guid)
    if lock:
        found = found.select_for_update(of=("self",))
    sub = found.first()
    if sub is None:
        raise NotFound()
    if sub.deleted is not None:
        raise Gone()
    return sub
