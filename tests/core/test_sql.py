"""core.db.sql's written-out inserts and lookups, on PostgreSQL (the e2e test of the embedded
default runs their SQLite forms through the API)."""

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import DataError, transaction

from core.db import sql
from subscriptions.models import Subscription, SubscriptionFeed
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db
AT = datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=UTC)


def insert_subscriptions(user, guids, urls, **columns):
    values = {"guid": guids, "feed_url": urls, **columns}
    return sql.insert(
        Subscription,
        values,
        same={"user": user.pk, "is_subscribed": True, "subscription_changed": AT, "created": AT},
        returning=["guid", "id"],
    )


def test_insert_writes_each_row_and_returns_what_was_asked():
    user: Any = UserFactory()
    guids = [uuid.uuid4() for _ in range(3)]
    urls = ["https://a.example/1", "https://例え.jp/フィード", "https://a.example/'quote"]

    rows = insert_subscriptions(user, guids, urls, deleted=[None, None, None])

    stored = {sub.guid: sub for sub in Subscription.objects.filter(user=user)}
    assert dict(rows) == {guid: stored[guid].pk for guid in guids}
    assert [stored[guid].feed_url for guid in guids] == urls
    assert all(sub.subscription_changed == AT and sub.deleted is None for sub in stored.values())


def test_insert_of_no_rows_runs_no_query(django_assert_num_queries):
    user: Any = UserFactory()

    with django_assert_num_queries(0):
        assert insert_subscriptions(user, [], []) == []


def test_insert_needs_a_column_that_varies():
    with pytest.raises(ValueError, match="at least one column"):
        sql.insert(SubscriptionFeed, {}, same={})


def test_a_string_too_long_for_its_column_fails_instead_of_being_cut():
    user: Any = UserFactory()

    with pytest.raises(DataError), transaction.atomic():
        insert_subscriptions(user, [uuid.uuid4()], ["https://a.example/" + "x" * 2048])
    assert not Subscription.objects.filter(user=user).exists()


def test_by_key_finds_the_row_of_each_value_listed_that_meets_the_condition():
    user: Any = UserFactory()
    other: Any = UserFactory()
    guids = [uuid.uuid4() for _ in range(3)]
    insert_subscriptions(user, guids, [f"https://a.example/{i}" for i in range(3)])
    insert_subscriptions(other, guids[:1], ["https://a.example/0"])
    field = Subscription._meta.get_field("guid")

    def found(values):
        item, params = sql.by_key(
            Subscription, "guid", values, where="user_id = %s", params=[user.pk], alias="mine"
        )
        query = f"SELECT mine.guid, mine.user_id FROM {item}"
        return set(sql.fetch(query, params, sql.Columns(field, None)))

    assert found(guids[:2]) == {(guid, user.pk) for guid in guids[:2]}
    assert found([*guids, *guids]) == {(guid, user.pk) for guid in guids}
    assert found([]) == set()
    assert found([uuid.uuid4()]) == set()


def test_as_text_reads_a_uuid_as_its_canonical_string():
    guid = uuid.UUID("9B024349-CCF0-5F69-A609-6B82873EAB3C")
    user: Any = UserFactory()
    insert_subscriptions(user, [guid], ["https://a.example/"])
    field = Subscription._meta.get_field("guid")
    query = f"SELECT {sql.AsText.sql('guid')} FROM {Subscription._meta.db_table} WHERE user_id = %s"

    assert sql.fetch(query, [user.pk], sql.Columns(sql.AsText(field))) == [(str(guid),)]


def test_insert_ignoring_conflicts_leaves_out_rows_a_unique_constraint_refuses():
    user: Any = UserFactory()
    first, second = uuid.uuid4(), uuid.uuid4()
    insert_subscriptions(user, [first], ["https://a.example/1"])

    sql.insert(
        Subscription,
        {
            "guid": [first, second, second],
            "feed_url": ["https://x/1", "https://x/2", "https://x/3"],
        },
        same={"user": user.pk, "is_subscribed": True, "subscription_changed": AT, "created": AT},
        ignore_conflicts=True,
    )

    stored = dict(Subscription.objects.filter(user=user).values_list("guid", "feed_url"))
    assert stored == {first: "https://a.example/1", second: "https://x/2"}
