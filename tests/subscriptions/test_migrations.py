"""Migrations that change existing rows, run forward over rows made by the previous schema."""

import uuid
from datetime import UTC, datetime, timedelta

from tests.helpers import migrate

BEFORE = [("subscriptions", "0001_initial")]
AFTER = [("subscriptions", "0002_list_since")]


def test_0002_records_when_each_earlier_guid_was_replaced(back_to_latest):
    old = migrate(BEFORE)
    user = old.get_model("auth", "User").objects.create(username="migrated")
    start = datetime(2024, 1, 1, tzinfo=UTC)
    a, b, c, lone = (uuid.uuid4() for _ in range(4))
    chain = old.get_model("subscriptions", "Subscription").objects.create(
        user=user,
        guid=c,
        feed_url="https://example.com/chain",
        subscription_changed=start,
        guid_changed=start + timedelta(days=2),
        created=start,
    )
    single = old.get_model("subscriptions", "Subscription").objects.create(
        user=user,
        guid=lone,
        feed_url="https://example.com/lone",
        subscription_changed=start,
        created=start,
    )
    Guid = old.get_model("subscriptions", "SubscriptionGuid")
    for guid, days in ((a, 0), (b, 1), (c, 2)):
        Guid.objects.create(
            user=user, subscription=chain, guid=guid, assigned=start + timedelta(days=days)
        )
    Guid.objects.create(user=user, subscription=single, guid=lone, assigned=start)

    new = migrate(AFTER)

    replaced = {
        row.guid: row.replaced
        for row in new.get_model("subscriptions", "SubscriptionGuid").objects.all()
    }
    assert replaced == {
        a: start + timedelta(days=1),
        b: start + timedelta(days=2),
        c: None,
        lone: None,
    }
