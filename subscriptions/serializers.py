"""Request and response shapes of /v1/subscriptions."""

import functools
import uuid
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from api.fields import (
    RawStringField,
    StrictBooleanField,
    StrictCharField,
    TimestampField,
    format_timestamp,
)
from api.serializers import OmitNoneSerializer
from subscriptions import feeds


# No type: any JSON value is taken, and anything but a UUID string fails this entry only.
@extend_schema_field(
    {"nullable": True, "description": "A UUID; anything else is reported in `failure`."}
)
class SentGuidField(serializers.Field):
    """The optional guid of an add entry, kept as sent: a bad one is a per-entry failure."""

    def to_internal_value(self, data: Any) -> Any:
        return data

    def to_representation(self, value: Any) -> Any:
        return value


@extend_schema_field(OpenApiTypes.UUID)
class StrictUUIDField(StrictCharField):
    """A guid as a JSON string in any spelling uuid.UUID reads."""

    default_error_messages = {"invalid_uuid": "Must be a valid UUID."}

    def to_internal_value(self, data: Any) -> Any:
        guid = feeds.parse_guid(super().to_internal_value(data))
        if guid is None:
            self.fail("invalid_uuid")
        return guid


class AddEntrySerializer(serializers.Serializer):
    feed_url = RawStringField()
    guid = SentGuidField(required=False, allow_null=True)


class AddRequestSerializer(serializers.Serializer):
    subscriptions = AddEntrySerializer(many=True)

    # Running AddEntrySerializer's fields for each of 500 entries is costly (bench/README.md,
    # "subscriptions.serializers"): entries those fields take as they are pass straight through;
    # anything else runs them, for their errors. A test holds both ways to the same answers.
    def to_internal_value(self, data: Any) -> Any:
        entries = data.get("subscriptions") if isinstance(data, dict) else None
        if isinstance(entries, list) and all(
            isinstance(entry, dict) and isinstance(entry.get("feed_url"), str) for entry in entries
        ):
            return {"subscriptions": [_entry(entry) for entry in entries]}
        return super().to_internal_value(data)


def _entry(entry: dict[str, Any]) -> dict[str, Any]:
    taken = {"feed_url": entry["feed_url"]}
    if "guid" in entry:
        taken["guid"] = entry["guid"]
    return taken


class AddedSerializer(serializers.Serializer):
    feed_url = serializers.CharField()
    guid = serializers.UUIDField()
    is_subscribed = serializers.BooleanField()
    subscription_changed = TimestampField()


class AddFailureSerializer(serializers.Serializer):
    feed_url = serializers.CharField()
    message = serializers.CharField()


class AddResponseSerializer(serializers.Serializer):
    success = AddedSerializer(many=True)
    failure = AddFailureSerializer(many=True)

    # Describes the answer for the schema. The views build it with add_result_body(), which
    # is far cheaper than these fields for 500 entries. A test compares the two.


def add_result_body(result: Any) -> dict[str, Any]:
    """An add's result (services.AddResult) as AddResponseSerializer shows it."""
    stamp = functools.cache(format_timestamp)  # an add's subscriptions mostly share one time
    return {
        "success": [
            {
                "feed_url": sub.feed_url,
                "guid": str(sub.guid),
                "is_subscribed": sub.is_subscribed,
                "subscription_changed": stamp(sub.subscription_changed),
            }
            for sub in result.success
        ],
        "failure": [
            {"feed_url": failure.feed_url, "message": failure.message} for failure in result.failure
        ],
    }


class SubscriptionSerializer(OmitNoneSerializer):
    """A subscription as read by one of its guids (`guid`); `new_guid` is the latest."""

    feed_url = serializers.CharField()
    guid = serializers.UUIDField()
    is_subscribed = serializers.BooleanField()
    subscription_changed = TimestampField(required=False)
    new_guid = serializers.UUIDField(required=False)
    guid_changed = TimestampField(required=False)
    deleted = TimestampField(required=False)

    # Describes the item for the schema. The views build it with subscription_body(), which is
    # far cheaper than these fields for each of a page's items. A test compares the two.


def subscription_body(sub: Any, asked: uuid.UUID | str) -> dict[str, Any]:
    """The subscription's JSON body: `sub` as SubscriptionSerializer shows it read by `asked`,
    made without a serializer (bench/README.md, "subscriptions.serializers"). Guids are UUIDs, or
    their canonical strings (GET one and the list read them as text:
    selectors.ShownSubscription)."""
    shown = {
        "feed_url": sub.feed_url,
        "guid": str(asked),
        "is_subscribed": sub.is_subscribed,
        "subscription_changed": format_timestamp(sub.subscription_changed),
    }
    if str(sub.guid) != shown["guid"]:
        shown["new_guid"] = str(sub.guid)
    if sub.guid_changed is not None:
        shown["guid_changed"] = format_timestamp(sub.guid_changed)
    if sub.deleted is not None:
        shown["deleted"] = format_timestamp(sub.deleted)
    return shown


class UpdateRequestSerializer(serializers.Serializer):
    new_feed_url = RawStringField(required=False)
    new_guid = StrictUUIDField(required=False)
    is_subscribed = StrictBooleanField(required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(self.initial_data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError({name: ["Unknown field."] for name in unknown})
        if not attrs:
            raise serializers.ValidationError(
                "Send at least one of new_feed_url, new_guid, is_subscribed."
            )
        return attrs


class UpdateResponseSerializer(OmitNoneSerializer):
    new_feed_url = serializers.CharField(required=False)
    is_subscribed = serializers.BooleanField(required=False)
    subscription_changed = TimestampField(required=False)
    new_guid = serializers.UUIDField(required=False)
    guid_changed = TimestampField(required=False)


def update_result_body(change: Any, sub: Any) -> dict[str, Any]:
    """A PATCH's answer: only what it asked about (docs/api.md, "PATCH /v1/subscriptions/{guid}");
    `change` is the services.SubscriptionUpdate, `sub` the subscription it ended as."""
    answer: dict[str, object] = {}
    if change.new_feed_url is not None:
        answer.update(new_feed_url=sub.feed_url, subscription_changed=sub.subscription_changed)
    if change.is_subscribed is not None:
        answer.update(
            is_subscribed=sub.is_subscribed, subscription_changed=sub.subscription_changed
        )
    if change.new_guid is not None:
        answer.update(new_guid=sub.guid, guid_changed=sub.guid_changed)
    return UpdateResponseSerializer(answer).data
