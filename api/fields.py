"""Serializer fields shared by the apps: strict JSON types and the timestamp format."""

from datetime import UTC, datetime
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers


def format_timestamp(value: datetime) -> str:
    """RFC 3339 in UTC with milliseconds and Z: 2023-02-23T14:00:00.000Z."""
    # %-formatting, not isoformat(timespec=...): a page formats 50 to 150 of these
    # (bench/README.md, "api.fields.format_timestamp").
    v = value.astimezone(UTC)
    return "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ" % (  # noqa: UP031
        v.year, v.month, v.day, v.hour, v.minute, v.second, v.microsecond // 1000,
    )  # fmt: skip


@extend_schema_field(OpenApiTypes.DATETIME)
class TimestampField(serializers.Field):
    def to_representation(self, value: datetime) -> str:
        return format_timestamp(value)


class StrictCharField(serializers.CharField):
    """A JSON string and nothing else: DRF's CharField would take 5 as "5"."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


@extend_schema_field(OpenApiTypes.STR)
class RawStringField(serializers.Field):
    """Any JSON string, kept exactly as sent: the service judges its content.

    DRF's CharField would refuse NUL and lone surrogates for the whole request, where a bad
    feed URL in an add request is a failure of that entry only.
    """

    default_error_messages = {"invalid": "Must be a string."}

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return data

    def to_representation(self, value: Any) -> Any:
        return value


class StrictBooleanField(serializers.BooleanField):
    """A JSON true or false: DRF's BooleanField would take "yes" and 1."""

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data
