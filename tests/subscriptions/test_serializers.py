"""The subscription item, built by hand for speed, is what its declared fields would make."""

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from config.api.serializers import OmitNoneSerializer
from subscriptions.models import Subscription
from subscriptions.serializers import SubscriptionSerializer, item

GUID = uuid.UUID("9b024349-ccf0-5f69-a609-6b82873eab3c")
OLD = uuid.UUID("daac3ce5-7b16-4cf0-8294-86ad71944a64")
AT = datetime(2023, 2, 23, 14, 0, 0, 123456, tzinfo=UTC)


def by_fields(sub: Subscription, asked: uuid.UUID) -> dict[str, Any]:
    """What DRF makes of the item through the serializer's declared fields."""
    return OmitNoneSerializer.to_representation(
        SubscriptionSerializer(),
        {
            "feed_url": sub.feed_url,
            "guid": asked,
            "is_subscribed": sub.is_subscribed,
            "subscription_changed": sub.subscription_changed,
            "new_guid": sub.guid if sub.guid != asked else None,
            "guid_changed": sub.guid_changed,
            "deleted": sub.deleted,
        },
    )


@pytest.mark.parametrize(
    ("values", "asked"),
    [
        ({}, GUID),
        ({"guid_changed": AT}, GUID),
        ({"guid_changed": AT}, OLD),
        ({"is_subscribed": False, "deleted": AT}, OLD),
        ({"feed_url": "https://例え.jp/フィード?a=1&b=\u2028"}, GUID),
    ],
)
def test_an_item_is_what_its_declared_fields_make(values, asked):
    defaults = {
        "feed_url": "https://podnews.net/rss",
        "is_subscribed": True,
        "subscription_changed": datetime(2022, 1, 2, 3, 4, 5, tzinfo=UTC),
    }
    sub = Subscription(guid=GUID, **{**defaults, **values})

    shown = item(sub, asked)  # what the views answer

    assert shown == by_fields(sub, asked)
    assert list(shown) == [key for key in SubscriptionSerializer().fields if key in shown]
    assert SubscriptionSerializer((sub, asked)).data == shown
