"""Reads of subscriptions."""

import uuid
from typing import Any

from config.exceptions import Gone, NotFound
from subscriptions.models import Subscription, SubscriptionGuid


def subscription_by_guid(*, user: Any, guid: uuid.UUID) -> Subscription:
    """The user's subscription that has or had `guid`, in one query.

    Another user's guid is not found, exactly like one that does not exist.
    """
    row = (
        SubscriptionGuid.objects.select_related("subscription").filter(user=user, guid=guid).first()
    )
    if row is None:
        raise NotFound()
    if row.subscription.deleted is not None:
        raise Gone()
    return row.subscription
