"""Request and response shapes of /v1/auth/*."""

from typing import Any

from django.core.validators import ProhibitNullCharactersValidator
from rest_framework import serializers

from api.fields import StrictCharField


class CredentialField(StrictCharField):
    """A username, password or token, kept exactly as sent.

    One that cannot be right (surrounding spaces, a NUL) fails authentication with 401, as any
    wrong credential does, instead of being refused as input.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(trim_whitespace=False, **kwargs)
        self.validators = [
            v for v in self.validators if not isinstance(v, ProhibitNullCharactersValidator)
        ]


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
