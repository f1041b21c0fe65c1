"""Request bodies of the gpodder API: strict JSON types, 400 naming the bad field."""

from typing import Any

from rest_framework import serializers

from api.fields import RawStringField, StrictCharField


class DeviceSettingsSerializer(serializers.Serializer):
    caption = StrictCharField(
        max_length=255, required=False, allow_blank=True, trim_whitespace=False
    )
    type = StrictCharField(max_length=16, required=False)


class SubscriptionChangesSerializer(serializers.Serializer):
    add = serializers.ListField(child=RawStringField(), required=False, default=list)
    remove = serializers.ListField(child=RawStringField(), required=False, default=list)

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, dict):
            raise serializers.ValidationError({"non_field_errors": ["Send a JSON object."]})
        return super().to_internal_value(data)


class UrlListSerializer(serializers.ListSerializer):
    child = RawStringField()
