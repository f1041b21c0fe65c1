"""Serializers every API shares: the error object, and one that leaves out absent fields."""

from typing import Any

from rest_framework import serializers


class ErrorSerializer(serializers.Serializer):
    code = serializers.CharField(help_text='The HTTP status as a string, e.g. "405".')
    message = serializers.CharField()
    errors = serializers.DictField(  # type: ignore[assignment]
        required=False, help_text="Validation errors by field, when there are any."
    )


class OmitNoneSerializer(serializers.Serializer):
    """Leaves out optional fields whose value is None instead of sending null."""

    def to_representation(self, instance: Any) -> dict[str, Any]:
        data = super().to_representation(instance)
        return {key: value for key, value in data.items() if value is not None}
