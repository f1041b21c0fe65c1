"""What is built by hand for speed is what the declared fields would make: the subscription item,
the add response, and an add request's entries."""

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rest_framework import serializers

from subscriptions.models import Subscription
from subscriptions.serializers import (
    AddRequestSerializer,
    AddResponseSerializer,
    SubscriptionSerializer,
    add_result_body,
    subscription_body,
)
from subscriptions.services import AddFailure, AddResult

GUID = uuid.UUID("9b024349-ccf0-5f69-a609-6b82873eab3c")
OLD = uuid.UUID("daac3ce5-7b16-4cf0-8294-86ad71944a64")
AT = datetime(2023, 2, 23, 14, 0, 0, 123456, tzinfo=UTC)


def by_fields(sub: Subscription, asked: uuid.UUID) -> dict[str, Any]:
    """What DRF makes of the item through the serializer's declared fields."""
    return SubscriptionSerializer(
        {
            "feed_url": sub.feed_url,
            "guid": asked,
            "is_subscribed": sub.is_subscribed,
            "subscription_changed": sub.subscription_changed,
            "new_guid": sub.guid if sub.guid != asked else None,
            "guid_changed": sub.guid_changed,
            "deleted": sub.deleted,
        },
    ).data


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

    shown = subscription_body(sub, asked)  # what the views answer

    assert shown == by_fields(sub, asked)
    assert list(shown) == [key for key in SubscriptionSerializer().fields if key in shown]
    # The list reads guids as canonical strings.
    listed = Subscription(guid=str(GUID), **{**defaults, **values})
    assert subscription_body(listed, str(asked)) == shown


def test_an_add_response_is_what_its_declared_fields_make():
    result = AddResult(
        success=[
            Subscription(
                guid=GUID,
                feed_url=url,
                is_subscribed=True,
                subscription_changed=AT,
            )
            for url in ["https://podnews.net/rss", "https://例え.jp/フィード?a=1&b=\u2028"]
        ],
        failure=[
            AddFailure(feed_url="no-protocol", message="No protocol present"),
            AddFailure(feed_url="https://a.example/\ud800", message="Feed URL contains ..."),
        ],
    )

    shown = add_result_body(result)  # what the view answers

    assert shown == AddResponseSerializer(result).data
    assert add_result_body(AddResult(success=[], failure=[])) == {"success": [], "failure": []}


class AddRequestByFields(AddRequestSerializer):
    """The add request as its declared fields alone take it."""

    def to_internal_value(self, data: Any) -> Any:
        return serializers.Serializer.to_internal_value(self, data)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=8,
)
entries = st.fixed_dictionaries(
    {},
    optional={
        "feed_url": st.text(max_size=12) | json_values,
        "guid": st.uuids().map(str) | json_values,
        "other": json_values,
    },
)
add_bodies = json_values | st.fixed_dictionaries(
    {"subscriptions": st.lists(entries | json_values, max_size=4) | json_values},
    optional={"other": json_values},
)


@settings(max_examples=300, deadline=None)
@given(body=add_bodies)
def test_an_add_request_is_taken_as_its_declared_fields_take_it(body):
    fast, by_fields = AddRequestSerializer(data=body), AddRequestByFields(data=body)

    assert fast.is_valid() == by_fields.is_valid()
    assert fast.errors == by_fields.errors
    if by_fields.is_valid():
        assert fast.validated_data == by_fields.validated_data


@pytest.mark.parametrize(
    "body",
    [
        {"subscriptions": []},
        {"subscriptions": [{"feed_url": "https://a.example/"}, {"feed_url": "x", "guid": None}]},
        {"subscriptions": [{"feed_url": "x", "guid": 5, "more": [1]}], "other": {}},
    ],
)
def test_well_formed_add_requests_are_taken_whole(body):
    fast, by_fields = AddRequestSerializer(data=body), AddRequestByFields(data=body)

    assert fast.is_valid()
    assert by_fields.is_valid()
    assert fast.validated_data == by_fields.validated_data
