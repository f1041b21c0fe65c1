"""Serializers of the shared API plumbing: the error object and authentication."""

from typing import Any

from rest_framework import serializers

from api.fields import CredentialField


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


class LoginSerializer(serializers.Serializer):
    username = CredentialField(max_length=150)
    password = CredentialField(max_length=4096)


class RefreshSerializer(serializers.Serializer):
    refresh_token = CredentialField(max_length=4096)


class AccessTokenSerializer(serializers.Serializer):
    access_token = serializers.CharField()
    expires_in = serializers.IntegerField(help_text="Seconds until the access token expires.")
    refresh_token = serializers.CharField(
        help_text="The refresh token to use next: refresh tokens rotate on every use."
    )
    refresh_expires = serializers.CharField(help_text="RFC 3339 UTC expiry of the refresh token.")


class LoginResponseSerializer(AccessTokenSerializer):
    refresh_endpoint = serializers.CharField()
